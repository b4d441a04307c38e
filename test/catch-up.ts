import type { ProjectionRunner } from '@chronicle/projections';

/**
 * Run catchUp until `count` events were read. The global log holds back
 * events while an older transaction anywhere on the server is open (other
 * test files run beside this one), so one pass may stop early.
 */
export async function catchUpUntil(runner: ProjectionRunner, count: number, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let read = 0;
  while (read < count) {
    read += await runner.catchUp();
    if (read >= count) break;
    if (Date.now() > deadline) return read;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return read;
}
