import type { WorkerLogger } from '../worker-options';

/** Polls `condition` until it holds; fails with `description` after `timeoutMs`. */
export async function waitFor(description: string, condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A promise with its resolver, to hold a handler until the test lets it go. */
export function gate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export interface LogEntry {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/** A logger that keeps what it is told, so tests can wait for "result dropped" and the like. */
export function recordingLogger(): WorkerLogger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const record =
    (level: LogEntry['level']) =>
    (message: string, fields: Record<string, unknown> = {}): void => {
      entries.push({ level, message, fields });
    };
  return { entries, info: record('info'), warn: record('warn'), error: record('error') };
}
