/**
 * What keeps the web console's origin the console's own. The console (`/`) keeps its user's token
 * in the origin's localStorage, and the server also answers, on the same origin, content it does
 * not author: pages of services through `/proxy/services/…`, the model endpoint's answers, and
 * whatever an upstream relays. A page of a service on the console's origin could read that
 * token, script a console window, or register a service worker over the whole origin.
 *
 * So every answer of the server except the console's own files carries a CSP `sandbox` without
 * `allow-same-origin`: a browser gives such a document an opaque origin of its own. Its scripts
 * run, its forms and popups work, but it cannot read the console's storage or cookies, cannot
 * reach into a console window or frame, cannot register a service worker, and its requests to the
 * server are cross-origin (`Origin: null`), which the API answers without any CORS header, so
 * they are unreadable and carry no credential. The console's own answers deny framing and load
 * nothing but the console's files.
 */
import type { OutgoingHttpHeaders } from 'node:http';

/**
 * The `Content-Security-Policy` of everything the server answers but the console: a sandbox
 * that keeps what a page needs (scripts, forms, dialogs, popups, downloads) and gives it an
 * opaque origin (no `allow-same-origin`) and no hold on the top window (no
 * `allow-top-navigation`). Popups escape the sandbox, so a link opened in a new window works as
 * a link; one on this origin is answered with this policy again.
 */
export const SANDBOX_POLICY = [
  'sandbox',
  'allow-downloads',
  'allow-forms',
  'allow-modals',
  'allow-orientation-lock',
  'allow-pointer-lock',
  'allow-popups',
  'allow-popups-to-escape-sandbox',
  'allow-presentation',
  'allow-scripts',
].join(' ');

/**
 * The console's `Content-Security-Policy`: its own scripts, styles and API only (the favicon is a
 * `data:` URL), no plugin, no `<base>`, and no page may frame it (`frame-ancestors`, with
 * `X-Frame-Options` for browsers that predate it).
 */
export const CONSOLE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Headers of every answer of the console. `Cross-Origin-Opener-Policy: same-origin` cuts the
 * link between a console window and the page that opened it when that page is not the console
 * (a service's page calling `window.open('/')` gets a closed window back).
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_POLICY,
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/**
 * Response headers an upstream (a replica, a runner) may not pass to the browser: they act on the
 * whole origin, the console's, not on the answer. `Clear-Site-Data` would sign the console out;
 * `Service-Worker-Allowed` widens a service worker's scope beyond its path.
 */
const ORIGIN_WIDE_HEADERS: ReadonlySet<string> = new Set(['clear-site-data', 'service-worker-allowed']);

/**
 * An upstream's answer headers as the browser gets them: the sandbox policy first, the
 * upstream's own policies after it, and no origin-wide header. Browsers enforce every policy of
 * an answer, and a sandbox only ever adds restrictions, so whatever policy the upstream sends
 * can tighten the answer (the service's own CSP keeps protecting it) but never loosen or drop
 * the sandbox.
 */
export function withSandboxPolicy(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  const upstreamPolicies: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const lowerName = name.toLowerCase();
    if (value === undefined || ORIGIN_WIDE_HEADERS.has(lowerName)) continue;
    if (lowerName === 'content-security-policy') {
      upstreamPolicies.push(...(Array.isArray(value) ? value : [String(value)]));
      continue;
    }
    kept[name] = value;
  }
  // One header, policies separated by commas: the same to a browser as one header each.
  kept['content-security-policy'] = [SANDBOX_POLICY, ...upstreamPolicies].join(', ');
  return kept;
}
