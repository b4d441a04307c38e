import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { JsonPasses } from './json-counter';
import type { MeasuredWindow } from './measured-window';
import { waitUntil } from './scenario';

/** The preload that counts a process's JSON passes (json-counter.ts), built beside this file. */
export const JSON_COUNTER_SCRIPT = path.join(__dirname, 'json-counter.js');
const ANSWER_MS = 5_000;

/**
 * The JSON passes of one process (ours, started with JSON_COUNTER_SCRIPT
 * preloaded and `env()`'s variable) during a measured window, per run: it is
 * signalled at both edges and answers with its counts since the last signal.
 */
export class JsonMeter implements MeasuredWindow {
  private dir: string | undefined;
  private seq = 0;
  private perRun: { passes: number; characters: number } | undefined;

  /** `pid`: the counted process, once it runs. */
  constructor(private readonly pid: () => number | undefined) {}

  /** The counted process's environment: where it writes its counts. */
  async env(): Promise<Record<string, string>> {
    this.dir ??= await mkdtemp(path.join(tmpdir(), 'bench-json-'));
    return { JSON_COUNTER_FILE: path.join(this.dir, 'counts.json') };
  }

  async open(): Promise<void> {
    await this.ask();
  }

  async close(runs: number): Promise<void> {
    const counts = await this.ask();
    if (counts !== undefined && runs > 0)
      this.perRun = { passes: counts.passes / runs, characters: counts.characters / runs };
  }

  /** jsonPassesPerRun and jsonCharactersPerRun; none without a window, a run, or an answer. */
  figuresPerRun(): Record<string, number> {
    return this.perRun === undefined
      ? {}
      : { jsonPassesPerRun: this.perRun.passes, jsonCharactersPerRun: this.perRun.characters };
  }

  async end(): Promise<void> {
    if (this.dir !== undefined) await rm(this.dir, { recursive: true, force: true });
  }

  /** Its counts since the last signal, once its answer to this one is in the file. */
  private async ask(): Promise<JsonPasses | undefined> {
    const pid = this.pid();
    if (pid === undefined || this.dir === undefined) return undefined;
    const file = path.join(this.dir, 'counts.json');
    const want = ++this.seq;
    process.kill(pid, 'SIGUSR2');
    let counts: JsonPasses | undefined;
    const answered = await waitUntil(
      async () => {
        const text = await readFile(file, 'utf8').catch(() => '');
        counts = parsed(text);
        return counts?.seq === want;
      },
      Date.now() + ANSWER_MS,
      5,
    );
    return answered ? counts : undefined;
  }
}

/** The counts in `text`; undefined while the file is still empty or half written. */
function parsed(text: string): JsonPasses | undefined {
  try {
    return JSON.parse(text) as JsonPasses;
  } catch {
    return undefined;
  }
}
