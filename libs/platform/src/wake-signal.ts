/**
 * A wake-up handed to one waiter for one thing to do (a place freed): passed on (`pass`) to the next
 * waiter that wants it when the woken one cannot try (it failed, or its caller went away).
 */
export interface Relay<Interest> {
  readonly wants: (interest: Interest | undefined) => boolean;
  /** What it was for, as the waker named it: the woken waiter may act on it. */
  readonly reason?: string;
}

/**
 * Wakes waiters of this process at once (an append for subscribers, new
 * ready runs for long-polling lease requests), so they need not wait for
 * their timer.
 */
export class WakeSignal<Interest = void> {
  /** In the order they began waiting, with what each waits for. */
  private waiters = new Map<(relay?: Relay<Interest>) => void, Interest | undefined>();

  notify(): void {
    const waiters = this.waiters;
    this.waiters = new Map();
    for (const wake of waiters.keys()) wake();
  }

  /**
   * Wakes the longest waiter that `wants` this, alone: where one thing to do is for one waiter, waking them
   * all would have every one try for it at once.
   */
  notifyOne(wants: (interest: Interest | undefined) => boolean, reason?: string): void {
    for (const [wake, interest] of this.waiters) {
      if (!wants(interest)) continue;
      wake(reason === undefined ? { wants } : { wants, reason });
      return;
    }
  }

  /** A relay this waiter could not act on: to the next waiter that wants it. */
  pass(relay: Relay<Interest> | undefined): void {
    if (relay !== undefined) this.notifyOne(relay.wants, relay.reason);
  }

  /** Until woken, the timeout or the signal: a relay when this waiter was woken alone for one thing to do. */
  wait(timeoutMs: number, signal: AbortSignal | undefined, interest?: Interest): Promise<Relay<Interest> | undefined> {
    return new Promise((resolve) => {
      if (signal?.aborted === true) return resolve(undefined);
      const done = (relay?: Relay<Interest>): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        this.waiters.delete(done);
        resolve(relay);
      };
      const aborted = (): void => done();
      const timer = setTimeout(aborted, timeoutMs);
      signal?.addEventListener('abort', aborted, { once: true });
      this.waiters.set(done, interest);
    });
  }
}
