import type { BenchRun, QueueSystem } from './queue-system';
import { sleep } from './scenario';

const BATCH = 100;
/**
 * The producer stops adding while this many runs wait: the system is kept
 * saturated, yet the start delay measures the system, not an ever-growing queue.
 */
const MAX_BACKLOG = 1_000;

/**
 * One producer sending batches of 100 back to back until `endAt`, each run
 * due when its batch is sent, pausing while 1,000 of them have not started
 * (`started`: the handlers started so far). Returns how many runs it sent.
 */
export async function produceUntil(system: QueueSystem, endAt: number, started: () => number): Promise<number> {
  let sent = 0;
  while (Date.now() < endAt) {
    if (sent - started() >= MAX_BACKLOG) {
      await sleep(2);
      continue;
    }
    const dueAt = Date.now();
    await system.enqueue(Array.from({ length: BATCH }, (_, i): BenchRun => ({ payload: { n: sent + i, dueAt } })));
    sent += BATCH;
  }
  return sent;
}
