/** The answers of `repos/get` and `files/upload_archive`, loaded by `DstackApiClient` when one comes. */
export { FileArchiveSchema, RepoHeadSchema } from '@dstack/core';
