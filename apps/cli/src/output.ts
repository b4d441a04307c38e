import { Presets, SingleBar } from 'cli-progress';

/** Exit codes scripts can rely on. */
export const EXIT = {
  ok: 0,
  /** The command ran and found a problem (verify's differences, a refused request). */
  failed: 1,
  /** The command line or the configuration is wrong. */
  usage: 2,
  /** The server or the database could not be reached. */
  unavailable: 3,
} as const;

/** A failure the CLI reports in one line, with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Progress of a long command: a bar with rate and ETA on a terminal, a line now and then otherwise. */
export interface Progress {
  update(done: number, phase: string): void;
  stop(): void;
}

/**
 * What the commands print: tables and sentences for people, JSON for
 * scripts (`--json`); progress on stderr, so that stdout stays the result.
 */
export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: NodeJS.WriteStream = process.stdout,
    private readonly stderr: NodeJS.WriteStream = process.stderr,
  ) {}

  table(rows: ReadonlyArray<Record<string, unknown>>): void {
    if (this.json) {
      this.stdout.write(`${JSON.stringify(rows)}\n`);
      return;
    }
    if (rows.length === 0) {
      this.stdout.write('(none)\n');
      return;
    }
    const columns = Object.keys(rows[0]!);
    const cells = rows.map((row) => columns.map((c) => format(row[c])));
    const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
    const line = (values: readonly string[]): string =>
      values
        .map((v, i) => v.padEnd(widths[i]!))
        .join('  ')
        .trimEnd();
    this.stdout.write(`${[line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n')}\n`);
  }

  /** A command's result: `value` as JSON, or `sentence` for people. */
  result(value: unknown, sentence: string): void {
    this.stdout.write(this.json ? `${JSON.stringify(value)}\n` : `${sentence}\n`);
  }

  /** A value as it is: JSON for scripts and people alike (a page of a listing with --json). */
  raw(value: unknown): void {
    this.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** One resource (a job, a run): indented JSON for people, one line with --json. */
  document(value: unknown): void {
    this.stdout.write(`${this.json ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`);
  }

  /** A remark beside the result (where the next page starts), on stderr; none with --json. */
  note(message: string): void {
    if (!this.json) this.stderr.write(`${message}\n`);
  }

  error(message: string): void {
    this.stderr.write(this.json ? `${JSON.stringify({ error: message })}\n` : `chronicle: ${message}\n`);
  }

  progress(title: string, total: number | undefined, unit = 'events'): Progress {
    if (this.stderr.isTTY === true && !this.json) {
      const bar = new SingleBar(
        {
          format: `${title} [{bar}] {value}${total === undefined ? '' : '/{total}'} ${unit} | {speed} ${unit}/s | ETA {eta_formatted} | {phase}`,
          etaBuffer: 20,
          stream: this.stderr,
        },
        Presets.shades_classic,
      );
      const started = Date.now();
      bar.start(total ?? 0, 0, { speed: 0, phase: 'starting' });
      return {
        update: (done, phase) => {
          if (total === undefined || done > bar.getTotal()) bar.setTotal(done);
          bar.update(done, { speed: Math.round(done / Math.max((Date.now() - started) / 1000, 0.001)), phase });
        },
        stop: () => bar.stop(),
      };
    }
    // Not a terminal: a plain line at most every 2 s.
    let last = 0;
    const started = Date.now();
    return {
      update: (done, phase) => {
        const now = Date.now();
        if (now - last < 2000) return;
        last = now;
        const seconds = (now - started) / 1000;
        this.stderr.write(
          `${title}: ${phase}, ${done} ${unit}, ${Math.round(done / Math.max(seconds, 0.001))} ${unit}/s\n`,
        );
      },
      stop: () => undefined,
    };
  }
}

/** A command-line option's whole number above 0, or a usage error. */
export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CliError(`not a positive integer: ${value}`, EXIT.usage);
  return n;
}

function format(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function nonNegativeInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || value.trim() === '')
    throw new CliError(`not a whole number of 0 or more: ${value}`, EXIT.usage);
  return n;
}
