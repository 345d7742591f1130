/**
 * Descriptions of the server's own config.yml fields, for the generated
 * reference. The schema's own `.describe()`/`.meta()` text wins over these;
 * the generator fails when an entry here names a field the schema no longer
 * has, so this list cannot drift silently. Backend fields are described by
 * their packages' schemas.
 */
export const SERVER_CONFIG_DESCRIPTIONS = {
  projects:
    'The projects the server creates at start, with their backends. Backends of a listed project are kept in sync with this file. Absent or null: none.',
  'projects[].name':
    'Project name: 1–50 letters, digits, `-` or `_`, starting with a letter or digit. Unique in the file.',
  'projects[].backends':
    'The project’s backends. Each entry’s `type` selects its fields, described under [Backends](#backends); a type appears at most once per project. Absent or null: none.',
  encryption:
    'Encryption of secrets at rest (backend creds, project SSH keys, SSH fleet logins). A new server writes a generated `aes` key here. Absent: values are stored unencrypted (`identity`) and the server warns at start.',
  'encryption.keys':
    'The first key encrypts; every key decrypts, so a key is rotated by putting the new one first and keeping the old one after it. At start, values not yet under an `aes` key are encrypted with the first key when it is an `aes` one; values under an older `aes` key are left as they are. Every server replica on one database needs the same keys.',
  'encryption.keys[] (type: aes).type': 'AES-256-GCM.',
  'encryption.keys[] (type: aes).name': 'The key’s name, stored with every value it encrypts.',
  'encryption.keys[] (type: aes).secret':
    'Base64 of 32 random bytes, e.g. `head -c 32 /dev/urandom | base64`.',
  'encryption.keys[] (type: identity).type':
    'No encryption: values are stored as they are (base64). First in the list, it stores new values unencrypted and the server warns at start.',
  default_permissions: 'What users without the global admin role may do.',
  'default_permissions.allow_non_admins_create_projects': 'Whether non-admin users may create projects.',
  'default_permissions.allow_non_admins_manage_ssh_fleets':
    'Whether non-admin users may create and delete SSH fleets.',
  catalog:
    'Where AWS and GCP offers come from: gpuhunt’s published per-provider catalogs, cached in `data/catalog` and refreshed every 15 minutes in the background; a plan answers from the cache or the bundled snapshot until a catalog arrives.',
  'catalog.url':
    'Base URL of a catalog in gpuhunt’s v3 layout (`{url}/{provider}/version`, `{url}/{provider}/{version}/catalog.zip`), e.g. one written by `dstack-catalog publish`. Wins over `GPUHUNT_CATALOG_URL`. Absent: that variable, else gpuhunt’s bucket.',
  'catalog.offline':
    'Plan from the snapshot bundled with `@dstack/catalog` only, never downloading a catalog.',
  events:
    'How long the events of runs, jobs, fleets, instances, volumes and gateways (`dstack event`, `POST /api/events/list`) are kept.',
  'events.ttl_seconds':
    'Seconds an event is kept; older ones are deleted every 10 minutes. 0 records no events. Wins over `DSTACK_SERVER_EVENTS_TTL_SECONDS`. Absent: that variable, else 30 days (2592000).',
  plugins: 'dstack’s plugin list: accepted for compatibility with dstack’s config.yml and ignored.',
};
