import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The one API key the fake provider accepts unless `validApiKey` says otherwise. */
export const FAKE_BACKEND_VALID_API_KEY = 'valid-key';

/** The fake backend's type. */
export const FAKE_BACKEND_TYPE = 'fake';

/** The config models of a fake backend of type `type` (a project may hold several, of different types). */
export function fakeBackendConfigModelsOf(type: string) {
  return defineBackendConfigModels({
    type,
    configFields: { regions: z.array(z.string()).nullish() },
    credsSchemas: { api_key: { api_key: z.string().min(1) } },
    storedExtra: { project_name: z.string() },
  });
}

/** `backends: [{type: fake, regions?, creds: {type: api_key, api_key}}]`; `project_name` is stored. */
export const fakeBackendConfigModels = fakeBackendConfigModelsOf(FAKE_BACKEND_TYPE);

/** The config the fake Compute is built from (stored config plus creds). */
export type FakeBackendConfig = z.output<typeof fakeBackendConfigModels.config>;
/** The config users send (`validateConfig` input). */
export type FakeBackendConfigWithCreds = z.output<typeof fakeBackendConfigModels.backendConfigWithCreds>;
/** The config without creds (API answers). */
export type FakeBackendConfigWithoutCreds = z.output<typeof fakeBackendConfigModels.backendConfig>;
