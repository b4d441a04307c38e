import type { LoggerService } from '@nestjs/common';
import { pino, type DestinationStream, type Level, type Logger as PinoLogger } from 'pino';
import type { LogLevel } from '../config/config';
import { currentRequestContext } from './request-context';

/**
 * Fields never written, at the top of a line or one level down (`req.headers.authorization` two):
 * tokens and run payloads are the teams' secrets. fast-redact matches names exactly, so a run's
 * `fencingToken` is logged, a `token` is not.
 */
const REDACTED_FIELDS: readonly string[] = [
  'authorization',
  'cookie',
  'token',
  'adminToken',
  'teamToken',
  'workerToken',
  'password',
  'secret',
  'payload',
];
const REDACT_PATHS = [...REDACTED_FIELDS, ...REDACTED_FIELDS.map((f) => `*.${f}`), 'req.headers.authorization'];

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** The process's roles (`server`, `api`, ...): pino's `name` on every line. */
  readonly name?: string;
  /** Where lines go; stdout (synchronously) unless given. Tests capture them so. */
  readonly destination?: DestinationStream;
}

/** A root logger: pino, one JSON line per event, `"level":"info"`, ISO `time`, the request's id when there is one. */
export function createLogger(options: LoggerOptions | LogLevel = {}): JsonLogger {
  const { level = 'info', name, destination } = typeof options === 'string' ? { level: options } : options;
  const root = pino(
    {
      level,
      ...(name === undefined ? {} : { name }),
      timestamp: pino.stdTimeFunctions.isoTime,
      // Operators grep level names, not pino's numbers.
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
      // Called only for lines that are written; a fresh object each time (pino merges the line into it).
      mixin: () => {
        const request = currentRequestContext();
        return request === undefined ? {} : { requestId: request.requestId };
      },
    },
    destination,
  );
  return new JsonLogger(root);
}

/**
 * Our logger: pino underneath, with `info(message, fields)` for our code and
 * the LoggerService methods Nest calls (`log(message, context)`,
 * `error(message, stack, context)`), so Nest's own lines are pino's too.
 */
export class JsonLogger implements LoggerService {
  private readonly root: PinoLogger;

  constructor(
    /** The pino logger of this context (the root's, or a child's with its context bound). */
    private readonly pino: PinoLogger,
    root?: PinoLogger,
  ) {
    this.root = root ?? pino;
  }

  /** The same lines with `context` (a part of the process: `scheduler`, `http`, ...). */
  child(context: string): JsonLogger {
    // From the root: pino repeats a key bound twice, and a context replaces its parent's.
    return new JsonLogger(this.root.child({ context }), this.root);
  }

  /** For the hot path: build a line's fields only when the line would be written. */
  isLevelEnabled(level: LogLevel): boolean {
    return this.pino.isLevelEnabled(level);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  info(message: unknown, fields?: Record<string, unknown>): void {
    this.write('info', message, fields === undefined ? [] : [fields]);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  /**
   * Our calls pass an object of fields (an Error as `err`); Nest's pass its
   * context as the last string, and for errors a stack before it.
   */
  private write(level: Level, message: unknown, rest: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    const strings: string[] = [];
    for (const extra of rest) {
      if (typeof extra === 'string') strings.push(extra);
      else if (extra instanceof Error) fields['err'] = extra;
      else if (extra !== null && typeof extra === 'object') Object.assign(fields, extra);
    }
    const context = strings.pop();
    if (context !== undefined) fields['context'] = context;
    if (strings.length > 0 && fields['err'] === undefined) fields['err'] = { stack: strings.join('\n') };
    let msg: string;
    if (message instanceof Error) {
      fields['err'] = message;
      msg = message.message;
    } else msg = typeof message === 'string' ? message : JSON.stringify(message);
    this.pino[level](fields, msg);
  }
}
