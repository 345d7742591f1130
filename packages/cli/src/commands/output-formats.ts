/**
 * The `--format` choices of the commands, apart from the commands themselves: the program's
 * option definitions (and `--help`) need them without loading what the commands load.
 */
export const VALIDATE_FORMATS = ['yaml', 'json'] as const;
export type ValidateFormat = (typeof VALIDATE_FORMATS)[number];

export const PS_FORMATS = ['table', 'json'] as const;
export type PsFormat = (typeof PS_FORMATS)[number];

export const OFFER_FORMATS = ['table', 'json'] as const;
export type OfferFormat = (typeof OFFER_FORMATS)[number];
