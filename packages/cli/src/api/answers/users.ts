/** The answers of the server, project and user endpoints, loaded by `DstackApiClient` when one comes. */
export { ProjectSchema, ServerInfoSchema, UserSchema } from '@dstack/core';
