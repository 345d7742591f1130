/**
 * Markdown reference tables from JSON Schema (as zod 4's `toJSONSchema` writes
 * it, on the input side): one table per object, with each field's type,
 * whether it is required, its default and its description, and one more
 * section for every nested object, array of objects, or union variant.
 */

/** A table cell: pipes escaped, newlines folded. */
export function cell(text) {
  return String(text)
    .replace(/\|/g, '\\|')
    .replace(/\s*\n\s*/g, ' ');
}

function isNull(schema) {
  return schema?.type === 'null';
}

/** The variants of a union (`anyOf`/`oneOf`) without `null`, and whether null was one. */
function splitNullable(schema) {
  const variants = schema.anyOf ?? schema.oneOf;
  if (!variants) return { variants: [schema], nullable: false };
  return { variants: variants.filter((variant) => !isNull(variant)), nullable: variants.some(isNull) };
}

function isObjectWithFields(schema) {
  return schema?.type === 'object' && schema.properties && Object.keys(schema.properties).length > 0;
}

/** The `const` value of a union variant's discriminator field (`type`), if any. */
function discriminatorOf(schema) {
  const type = schema?.properties?.type;
  return type && 'const' in type ? type.const : undefined;
}

/** A variant's section title suffix, e.g. `(type: aes)`. */
function variantLabel(schema, index) {
  const discriminator = discriminatorOf(schema);
  return discriminator === undefined ? `(variant ${index + 1})` : `(type: ${discriminator})`;
}

/** The anchor GitHub derives from a heading. */
export function anchorOf(heading) {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/** A human type label; nested objects link to their own section. */
function typeLabel(schema, link) {
  if (!schema || Object.keys(schema).length === 0) return 'any';
  if ('const' in schema) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(' or ');
  const union = schema.anyOf ?? schema.oneOf;
  if (union) {
    const { variants, nullable } = splitNullable(schema);
    const objects = variants.filter(isObjectWithFields);
    const labels =
      objects.length > 1 && objects.length === variants.length
        ? [`one of ${link ? `[${objects.length} object types](#${link})` : `${objects.length} object types`}`]
        : variants.map((variant) => typeLabel(variant, link));
    return [...new Set(labels)].join(' or ') + (nullable ? ' or null' : '');
  }
  switch (schema.type) {
    case 'array':
      return `list of ${typeLabel(schema.items, link)}`;
    case 'object':
      if (isObjectWithFields(schema)) return link ? `[object](#${link})` : 'object';
      return schema.additionalProperties && Object.keys(schema.additionalProperties).length > 0
        ? `map of ${typeLabel(schema.additionalProperties, link)}`
        : 'object';
    case 'string':
      return schema.format ? `string (${schema.format})` : 'string';
    case 'integer':
    case 'number':
    case 'boolean':
      return schema.type;
    default:
      return Array.isArray(schema.type) ? schema.type.join(' or ') : String(schema.type ?? 'any');
  }
}

/** Constraints worth stating: bounds, lengths, patterns. */
function constraintsOf(schema) {
  const { variants } = splitNullable(schema);
  const notes = [];
  for (const variant of variants) {
    const target = variant.type === 'array' ? (variant.items ?? {}) : variant;
    if (variant.type === 'array' && variant.minItems !== undefined)
      notes.push(`at least ${variant.minItems} item(s)`);
    if (target.minLength > 1) notes.push(`at least ${target.minLength} characters`);
    if (target.minLength === 1) notes.push('not empty');
    if (target.maxLength !== undefined) notes.push(`at most ${target.maxLength} characters`);
    if (target.minimum !== undefined) notes.push(`≥ ${target.minimum}`);
    if (target.exclusiveMinimum !== undefined) notes.push(`> ${target.exclusiveMinimum}`);
    if (target.maximum !== undefined) notes.push(`≤ ${target.maximum}`);
    if (target.pattern !== undefined) notes.push(`matches \`${target.pattern}\``);
  }
  return [...new Set(notes)];
}

/** The objects nested in a field's schema, each with the path suffix of its section. */
function nestedObjects(schema) {
  const { variants } = splitNullable(schema);
  const nested = [];
  for (const variant of variants) {
    if (variant.type === 'array' && variant.items) {
      for (const item of nestedObjects(variant.items)) nested.push({ ...item, suffix: `[]${item.suffix}` });
    } else if (isObjectWithFields(variant)) {
      nested.push({ schema: variant, suffix: '' });
    }
  }
  const objects = nested.filter((entry) => entry.suffix === '' || entry.suffix === '[]');
  if (objects.length > 1) {
    return nested.map((entry, index) => ({
      ...entry,
      suffix: `${entry.suffix} ${variantLabel(entry.schema, index)}`,
    }));
  }
  return nested;
}

/**
 * @typedef {object} RenderOptions
 * @property {(path: string, schema: object) => string | undefined} [describe]
 *   a description for a field path (e.g. `projects[].name`) when its schema has none
 * @property {(path: string) => boolean} [skip] whether to leave out the section of a nested path
 * @property {(path: string) => boolean | undefined} [isRequired]
 *   overrides the schema's `required` for a path (e.g. a field a preprocess fills in)
 * @property {number} [headingLevel] the level of the first heading (default 2)
 */

/**
 * The sections of an object schema: a heading with `title`, its fields
 * table, then the sections of nested objects.
 * @param {string} title heading text
 * @param {string} [path] the object's field path (e.g. `projects[]`; '' at the top), which
 *   prefixes its fields' paths and names the nested sections; default `title`
 * @param {object} schema JSON Schema of an object
 * @param {RenderOptions} options
 * @returns {string}
 */
export function renderObjectSections(title, schema, options = {}, path = title) {
  const prefix = path ? `${path}.` : '';
  const level = options.headingLevel ?? 2;
  const lines = [`${'#'.repeat(level)} ${title}`, ''];
  if (schema.description) lines.push(schema.description, '');
  const nestedSections = [];
  const rows = [];
  const required = new Set(schema.required ?? []);
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const fieldPath = `${prefix}${name}`;
    const nested = nestedObjects(field).filter(
      (entry) => !(options.skip?.(`${fieldPath}${entry.suffix}`) ?? false),
    );
    // A union of objects links to its first variant's section; the others follow it.
    const link = nested.length > 0 ? anchorOf(`${fieldPath}${nested[0].suffix}`) : undefined;
    const isRequired = options.isRequired?.(fieldPath) ?? required.has(name);
    // Asked even when the schema has a description, so the caller can tell which of its paths exist.
    const fallback = options.describe?.(fieldPath, field);
    const description = field.description ?? fallback ?? '';
    const constraints = constraintsOf(field);
    const fullDescription = [description, constraints.length ? `(${constraints.join('; ')})` : '']
      .filter(Boolean)
      .join(' ');
    rows.push(
      `| \`${name}\` | ${cell(typeLabel(field, link))} | ${isRequired ? 'required' : 'optional'} | ${
        'default' in field ? cell(`\`${JSON.stringify(field.default)}\``) : '–'
      } | ${cell(fullDescription || '–')} |`,
    );
    for (const entry of nested) {
      const nestedPath = `${fieldPath}${entry.suffix}`;
      nestedSections.push(renderObjectSections(nestedPath, entry.schema, options, nestedPath));
    }
  }
  if (rows.length > 0) {
    lines.push('| field | type | required | default | description |', '|---|---|---|---|---|', ...rows, '');
  }
  if (schema.additionalProperties === false) lines.push('Other fields are rejected.', '');
  return [lines.join('\n'), ...nestedSections].join('\n');
}
