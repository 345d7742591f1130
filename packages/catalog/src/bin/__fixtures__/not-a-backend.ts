/** A module without a catalog provider, for the error path. */
export const something = 42;
