/**
 * Locates the first syntax error in a JSON text and names it the way
 * Python's `json` module does ("Expecting value", "Expecting ',' delimiter",
 * ...). V8's `JSON.parse` messages carry no reliable offset, and the FastAPI
 * style 422 body reports `loc: ["body", <offset>]`.
 */
export interface JsonSyntaxError {
  position: number;
  reason: string;
}

class Failure extends Error {
  constructor(
    readonly position: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
const LITERALS = ["true", "false", "null", "NaN", "Infinity", "-Infinity"];

export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  let i = 0;

  const skipWhitespace = () => {
    while (i < text.length && WHITESPACE.has(text[i]!)) i++;
  };

  const parseString = () => {
    const start = i;
    i++; // opening quote
    while (i < text.length) {
      const ch = text[i]!;
      if (ch === '"') {
        i++;
        return;
      }
      if (ch === "\\") {
        const next = text[i + 1];
        if (next === undefined) break;
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
            throw new Failure(i, "Invalid \\uXXXX escape");
          }
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(next)) throw new Failure(i, "Invalid \\escape");
        i += 2;
        continue;
      }
      if (ch.charCodeAt(0) < 0x20) throw new Failure(i, "Invalid control character at");
      i++;
    }
    throw new Failure(start, "Unterminated string starting at");
  };

  const parseValue = (): void => {
    skipWhitespace();
    const ch = text[i];
    if (ch === "{") {
      parseObject();
      return;
    }
    if (ch === "[") {
      parseArray();
      return;
    }
    if (ch === '"') {
      parseString();
      return;
    }
    for (const literal of LITERALS) {
      if (text.startsWith(literal, i)) {
        i += literal.length;
        return;
      }
    }
    NUMBER.lastIndex = i;
    const match = NUMBER.exec(text);
    if (match) {
      i += match[0].length;
      return;
    }
    throw new Failure(i, "Expecting value");
  };

  const parseObject = () => {
    i++; // {
    skipWhitespace();
    if (text[i] === "}") {
      i++;
      return;
    }
    for (;;) {
      skipWhitespace();
      if (text[i] !== '"')
        throw new Failure(i, "Expecting property name enclosed in double quotes");
      parseString();
      skipWhitespace();
      if (text[i] !== ":") throw new Failure(i, "Expecting ':' delimiter");
      i++;
      parseValue();
      skipWhitespace();
      if (text[i] === "}") {
        i++;
        return;
      }
      if (text[i] !== ",") throw new Failure(i, "Expecting ',' delimiter");
      i++;
    }
  };

  const parseArray = () => {
    i++; // [
    skipWhitespace();
    if (text[i] === "]") {
      i++;
      return;
    }
    for (;;) {
      parseValue();
      skipWhitespace();
      if (text[i] === "]") {
        i++;
        return;
      }
      if (text[i] !== ",") throw new Failure(i, "Expecting ',' delimiter");
      i++;
    }
  };

  try {
    parseValue();
    skipWhitespace();
    if (i < text.length) throw new Failure(i, "Extra data");
    return null;
  } catch (error) {
    if (error instanceof Failure) return { position: error.position, reason: error.reason };
    throw error;
  }
}
