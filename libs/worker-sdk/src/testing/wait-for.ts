import type { WorkerLogger } from '../worker-options';

export interface WaitOptions {
  /** Fail after this long (default 10 s). */
  readonly timeoutMs?: number;
  /** Look again this often (default 10 ms). */
  readonly pollMs?: number;
  /** What is awaited, for the failure message. */
  readonly description?: string;
}

/**
 * Wait for a condition with a deadline, never a fixed sleep: a test polls for
 * what it awaits and fails, saying what, once the deadline passes, where a
 * sleep of a guessed length is too short on a slow machine (a flaky test) and
 * wasted on a fast one. The one waitFor of every test in the repository: it
 * lives here because the SDK depends on nothing of the server's, and the
 * server's tests get it through @chronicle/testing. A number is the timeout.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions | number = {},
): Promise<void> {
  const {
    timeoutMs = 10_000,
    pollMs = 10,
    description = 'the condition',
  } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
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
