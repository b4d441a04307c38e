/** How deep a request body's JSON may nest: far beyond any real payload, far below what recursion survives. */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The body parser's `verify`: refuses, before parsing, a body whose JSON nests deeper than `max`
 * (one pass over the bytes, brackets inside strings skipped). JSON.parse copes with deep nesting, but
 * JSON.stringify, validators and PostgreSQL's jsonb recurse and would fail later, as a 500.
 */
export function refuseDeepJson(max = MAX_JSON_DEPTH): (request: unknown, response: unknown, body: Buffer) => void {
  return (_request, _response, body) => {
    let depth = 0;
    let inString = false;
    for (let i = 0; i < body.length; i++) {
      const byte = body[i]!;
      if (inString) {
        if (byte === BACKSLASH) i++;
        else if (byte === QUOTE) inString = false;
      } else if (byte === QUOTE) inString = true;
      else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (++depth > max) throw tooDeep(max);
      } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) depth--;
    }
  };
}

/** As body-parser's own errors: a status, so that it is answered as a 400 problem. */
function tooDeep(max: number): Error & { status: number; type: string } {
  return Object.assign(new Error(`the request body nests deeper than ${max} levels`), {
    status: 400,
    type: 'entity.too.deep',
  });
}
