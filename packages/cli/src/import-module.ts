/**
 * `import(specifier)`, for the modules the CLI loads from where they are installed: the optional
 * `@dstack/server` and the provider modules a configuration names. The CLI's bundle replaces this
 * module (scripts/bundle.mjs): it runs as a script compiled through `vm.Script` (for V8's code
 * cache), where Node 20 allows no `import()`, so its launcher lends its own.
 */
export function importModule(specifier: string): Promise<unknown> {
  return import(specifier);
}
