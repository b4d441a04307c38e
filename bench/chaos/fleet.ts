import * as path from 'node:path';
import { waitUntilHealthy } from '@chronicle/e2e-support';
import { startNodeChild, type Child } from '../compare/child-processes';

export type SlotKind = 'node' | 'projector' | 'worker';

export interface SlotSpec {
  readonly kind: SlotKind;
  readonly name: string;
  /** The built script it runs. */
  readonly script: string;
  readonly env: Readonly<Record<string, string>>;
  /** Its HTTP port, the same after every restart (nodes and projectors answer /healthz there). */
  readonly port?: number;
  /** Where `<name>.log` gets all it prints; none: only its last lines are kept. */
  readonly logDir?: string;
}

const READY_TIMEOUT_MS = 90_000;

/**
 * One process of the fleet, by role, that the chaos kills, stops and restarts: a restart is a new
 * process (a new pid, so a new scheduler node) on the same port.
 */
export class Slot {
  private child: Child | undefined;
  /** up: running (or starting); down: killed, not yet restarted; stopped: SIGSTOPped. */
  state: 'up' | 'down' | 'stopped' = 'down';
  starts = 0;

  constructor(readonly spec: SlotSpec) {}

  get kind(): SlotKind {
    return this.spec.kind;
  }
  get name(): string {
    return this.spec.name;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts it; a node or projector resolves once its /healthz answers 200. */
  async start(): Promise<void> {
    const env = { ...this.spec.env, ...(this.spec.port === undefined ? {} : { PORT: String(this.spec.port) }) };
    const log = this.spec.logDir === undefined ? undefined : path.join(this.spec.logDir, `${this.spec.name}.log`);
    const child = startNodeChild(this.spec.script, env, log);
    this.child = child;
    this.starts++;
    this.state = 'up';
    if (this.spec.port === undefined) return;
    await waitUntilHealthy(`http://127.0.0.1:${this.spec.port}`, {
      timeoutMs: READY_TIMEOUT_MS,
      exitedWith: () => (child.hasExited() ? child.output() : undefined),
      output: () => child.output(),
    });
  }

  async kill(): Promise<void> {
    const child = this.child;
    this.state = 'down';
    if (child === undefined) return;
    child.signal('SIGKILL');
    await child.exited;
  }

  pause(): void {
    this.child?.signal('SIGSTOP');
    this.state = 'stopped';
  }

  resume(): void {
    this.child?.signal('SIGCONT');
    this.state = 'up';
  }

  /** SIGTERM (after SIGCONT): a drained stop. */
  async stop(): Promise<void> {
    await this.child?.stop(20_000);
    this.state = 'down';
  }

  /** Died by itself (not by the chaos): what it printed last. */
  crashed(): string | undefined {
    return this.state === 'up' && this.child?.hasExited() === true ? this.child.output() : undefined;
  }
}
