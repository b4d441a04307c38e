import type { LoggerService } from '@nestjs/common';
import type { LogLevel } from '../config/config';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * One JSON object per line on stdout (errors on stderr), so log shippers need
 * no parsing rules. Also serves as Nest's logger.
 */
export class JsonLogger implements LoggerService {
  constructor(
    private readonly level: LogLevel = 'info',
    private readonly context?: string,
  ) {}

  child(context: string): JsonLogger {
    return new JsonLogger(this.level, context);
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

  private write(level: LogLevel, message: unknown, rest: unknown[]): void {
    if (RANK[level] < RANK[this.level]) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level };
    // Nest passes its context as the last string argument.
    const last = rest[rest.length - 1];
    const context = typeof last === 'string' ? last : this.context;
    if (context !== undefined) entry['context'] = context;
    if (message instanceof Error) {
      entry['msg'] = message.message;
      entry['stack'] = message.stack;
    } else {
      entry['msg'] = typeof message === 'string' ? message : JSON.stringify(message);
    }
    for (const extra of rest) {
      if (extra instanceof Error) entry['err'] = { message: extra.message, stack: extra.stack };
      else if (extra !== null && typeof extra === 'object') Object.assign(entry, extra);
    }
    const line = JSON.stringify(entry) + '\n';
    if (level === 'error') process.stderr.write(line);
    else process.stdout.write(line);
  }
}
