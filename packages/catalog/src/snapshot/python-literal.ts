/**
 * Parses the Python literals SkyPilot writes into its `GpuInfo` column
 * (`{'Gpus': [{'Name': 'A100', 'Count': 8}], ...}`): dicts, lists, tuples,
 * single- or double-quoted strings, numbers, True/False/None.
 */
export function parsePythonLiteral(text: string): unknown {
  let position = 0;

  const fail = (message: string): never => {
    throw new SyntaxError(`${message} at offset ${position} in Python literal: ${text}`);
  };
  const skipSpace = () => {
    while (position < text.length && /\s/.test(text[position] ?? '')) position += 1;
  };
  const expect = (char: string) => {
    skipSpace();
    if (text[position] !== char) fail(`expected '${char}'`);
    position += 1;
  };

  const parseString = (): string => {
    const quote = text[position];
    position += 1;
    let value = '';
    while (position < text.length && text[position] !== quote) {
      if (text[position] === '\\') {
        const escaped = text[position + 1] ?? '';
        value += ({ n: '\n', t: '\t', r: '\r' } as Record<string, string>)[escaped] ?? escaped;
        position += 2;
      } else {
        value += text[position];
        position += 1;
      }
    }
    if (position >= text.length) fail('unterminated string');
    position += 1;
    return value;
  };

  const parseSequence = (close: string): unknown[] => {
    const items: unknown[] = [];
    skipSpace();
    while (text[position] !== close) {
      items.push(parseValue());
      skipSpace();
      if (text[position] === ',') position += 1;
      else if (text[position] !== close) fail(`expected ',' or '${close}'`);
      skipSpace();
    }
    position += 1;
    return items;
  };

  const parseDict = (): Record<string, unknown> => {
    const result: Record<string, unknown> = {};
    skipSpace();
    while (text[position] !== '}') {
      const key = parseValue();
      expect(':');
      result[String(key)] = parseValue();
      skipSpace();
      if (text[position] === ',') position += 1;
      else if (text[position] !== '}') fail("expected ',' or '}'");
      skipSpace();
    }
    position += 1;
    return result;
  };

  function parseValue(): unknown {
    skipSpace();
    const char = text[position];
    if (char === '{') {
      position += 1;
      return parseDict();
    }
    if (char === '[' || char === '(') {
      position += 1;
      return parseSequence(char === '[' ? ']' : ')');
    }
    if (char === "'" || char === '"') return parseString();
    const word = /^(?:True|False|None|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)/.exec(text.slice(position));
    if (!word) return fail('unexpected character');
    position += word[0].length;
    if (word[0] === 'True') return true;
    if (word[0] === 'False') return false;
    if (word[0] === 'None') return null;
    return Number(word[0]);
  }

  const value = parseValue();
  skipSpace();
  if (position !== text.length) fail('trailing characters');
  return value;
}
