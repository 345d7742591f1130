/**
 * `~/.dstack/config.yml` as `dstack project add` writes it (this CLI's and dstack's own), read
 * without the YAML parser: every command that talks to a server reads the file, and loading the
 * parser costs more than the rest of `dstack ps` does. Only a plain list of flat projects is
 * read here:
 *
 * ```yaml
 * projects:
 *   - name: main            # or `- default: true` at the left margin, as dstack writes it
 *     url: http://127.0.0.1:3000
 *     token: 0f3a…
 *     default: true
 * ```
 *
 * with keys of lowercase letters and `_`, and values `true`, `false` or strings that YAML reads
 * as strings without quotes. Anything else (comments, quotes, other keys at the top, blank
 * lines, tabs…) is left to the YAML parser, so what this reads is exactly what the parser would.
 */

const KEY = /^[a-z][a-z_]*$/;
/** Starts with no YAML indicator and holds no space, `#`, quote, bracket or comma. */
const PLAIN_STRING = /^[A-Za-z0-9_./][A-Za-z0-9_./:@+=~-]*$/;
/** The plain scalars YAML 1.2's core schema reads as null, booleans and numbers (yaml's tags). */
const NOT_STRINGS = [
  /^(?:~|[Nn]ull|NULL)?$/,
  /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/,
  /^0o[0-7]+$/,
  /^[-+]?[0-9]+$/,
  /^0x[0-9a-fA-F]+$/,
  /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
  /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/,
  /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/,
];
const ITEM_START = /^( *)- ([^:]*): (.*)$/;
const ITEM_FIELD = /^( *)([^:]*): (.*)$/;

function scalar(text: string): string | boolean | undefined {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (!PLAIN_STRING.test(text) || text.endsWith(':')) return undefined;
  if (NOT_STRINGS.some((pattern) => pattern.test(text))) return undefined;
  return text;
}

/**
 * `{projects: [...]}` as the YAML parser reads `text`, or undefined when `text` is not in the
 * plain form above (then the parser must read it).
 */
export function parsePlainConfig(text: string): { projects: Record<string, string | boolean>[] } | undefined {
  const lines = text.split('\n');
  while (lines.at(-1) === '') lines.pop();
  if (lines[0] !== 'projects:' || lines.length < 2) return undefined;
  const projects: Record<string, string | boolean>[] = [];
  const first = ITEM_START.exec(lines[1]!);
  if (!first) return undefined;
  const itemIndent = first[1]!;
  const fieldIndent = `${itemIndent}  `;
  let project: Record<string, string | boolean> = {};
  for (const line of lines.slice(1)) {
    const start = ITEM_START.exec(line);
    const field = start ? undefined : ITEM_FIELD.exec(line);
    const [, indent, key, text] = start ?? field ?? [];
    if (indent !== (start ? itemIndent : fieldIndent) || key === undefined || text === undefined)
      return undefined;
    if (start) {
      project = {};
      projects.push(project);
    }
    const value = scalar(text);
    // A key is a scalar too: `true:` or `null:` would not be the string it looks like.
    if (scalar(key) !== key || !KEY.test(key) || value === undefined || Object.hasOwn(project, key)) {
      return undefined;
    }
    project[key] = value;
  }
  return { projects };
}
