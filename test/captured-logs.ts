import { Writable } from 'node:stream';
import { createLogger, type JsonLogger, type LoggerOptions } from '@chronicle/platform';

/** A logger writing into arrays: each line as written (`raw`) and parsed (`lines`). */
export function capturedLogger(options: Omit<LoggerOptions, 'destination'> = {}): {
  logger: JsonLogger;
  lines: Array<Record<string, unknown>>;
  raw: string[];
} {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: createLogger({ ...options, destination }), lines, raw };
}
