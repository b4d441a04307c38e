import { START, type EventStore, type LogPosition, type RecordedEvent } from '@chronicle/event-store';

const CATCH_UP_MS = 30_000;

/**
 * The event log's head as the fuzz last saw it, through the event-store port: how many events were
 * appended since (one bounded count, cheap whatever the log holds), and moving the head past them.
 */
export class LogHead {
  private position: LogPosition = START;

  constructor(private readonly store: EventStore) {}

  /** Events appended after the head, counting at most `limit`. */
  appendedSince(limit = 100): Promise<number> {
    return this.store.countEventsAfter(this.position, limit);
  }

  /**
   * Reads up to the log's end and makes it the head; the events read, at most `keep` of them (the rest
   * are only passed over). The global read is gap-free: it waits for transactions still open anywhere
   * in the cluster (other test files'), so it is retried until no event is left after the head.
   */
  async catchUp(keep = 20): Promise<RecordedEvent[]> {
    const read: RecordedEvent[] = [];
    const deadline = Date.now() + CATCH_UP_MS;
    for (;;) {
      const page = await this.store.readAll({ from: this.position, maxCount: 1000 });
      if (page.length > 0) {
        read.push(...page.slice(0, Math.max(0, keep - read.length)));
        this.position = page.at(-1)!.position;
        continue;
      }
      if ((await this.appendedSince(1)) === 0) return read;
      if (Date.now() > deadline) throw new Error(`the log's events after the head were not readable in 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
