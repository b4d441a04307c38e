import { Injectable } from '@nestjs/common';

/**
 * Wakes long-polling lease requests of this process when runs become ready
 * here (enqueue, retry, replay). Other processes' runs are found by the
 * long-poll's timer at the next due time and its short fallback poll.
 */
@Injectable()
export class ReadySignal {
  private waiters = new Set<() => void>();

  notify(): void {
    const waiters = this.waiters;
    this.waiters = new Set();
    for (const wake of waiters) wake();
  }

  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.waiters.add(done);
    });
  }
}
