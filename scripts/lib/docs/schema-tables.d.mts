// Types of schema-tables.mjs, for the tests in @dstack/testing.
export interface RenderOptions {
  /** A description for a field path (e.g. `projects[].name`) when its schema has none. */
  describe?: (path: string, schema: object) => string | undefined;
  /** Whether to leave out the section of a nested path. */
  skip?: (path: string) => boolean;
  /** Overrides the schema's `required` for a path. */
  isRequired?: (path: string) => boolean | undefined;
  /** The level of the headings (default 2). */
  headingLevel?: number;
}

export function cell(text: unknown): string;
export function anchorOf(heading: string): string;
export function renderObjectSections(
  title: string,
  schema: object,
  options?: RenderOptions,
  path?: string,
): string;
