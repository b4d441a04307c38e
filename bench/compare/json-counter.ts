import { writeFileSync } from 'node:fs';

/**
 * Preloaded into our server by the bench (`node --require`): counts the
 * process's JSON passes, every JSON.parse and JSON.stringify (the HTTP
 * bodies, the pg driver's json columns, the log's events, the responses)
 * with the characters each pass went through. On SIGUSR2 it writes the
 * counts since the last signal to JSON_COUNTER_FILE and starts again from
 * zero, so the bench reads a window's passes by signalling at both edges.
 */
export interface JsonPasses {
  /** The signal's sequence number, so a reader knows the file is the answer to its signal. */
  readonly seq: number;
  readonly passes: number;
  readonly characters: number;
}

const file = process.env['JSON_COUNTER_FILE'];
if (file !== undefined && file !== '') {
  let passes = 0;
  let characters = 0;
  let seq = 0;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  JSON.parse = function countedParse(text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) {
    passes++;
    characters += typeof text === 'string' ? text.length : 0;
    return parse(text, reviver);
  } as typeof JSON.parse;
  JSON.stringify = function countedStringify(...args: Parameters<typeof JSON.stringify>) {
    const text = stringify(...args);
    passes++;
    characters += typeof text === 'string' ? text.length : 0;
    return text;
  } as typeof JSON.stringify;
  process.on('SIGUSR2', () => {
    const counts: JsonPasses = { seq: ++seq, passes, characters };
    writeFileSync(file, stringify(counts));
    passes = 0;
    characters = 0;
  });
}
