/**
 * Backend type → npm package, for discovery (`discovery.ts`). Its own module so
 * that `pnpm plop backend` can add a line without touching any logic: the
 * generator inserts `<type>: '<package>',` above the marker comment, so keep
 * one entry per line and the marker last.
 */
export const BACKEND_PACKAGES: Readonly<Record<string, string>> = {
  local: '@dstack/backend-local',
  aws: '@dstack/backend-aws',
  gcp: '@dstack/backend-gcp',
  vastai: '@dstack/backend-vastai',
  // plop:backend-packages — generated backends are inserted above this line.
};
