/**
 * Loads what many resolvers of one request ask for with one call of `batch`: the keys asked for while
 * the request's resolvers run (until the event loop's next turn, when only I/O is left to wait for)
 * go together. So a page of 100 runs with their events costs one read of the log, not 100.
 */
export class BatchLoader<Key, Value> {
  private pending: Array<{ key: Key; resolve: (value: Value) => void; reject: (error: unknown) => void }> = [];

  constructor(private readonly batch: (keys: readonly Key[]) => Promise<ReadonlyMap<Key, Value>>) {}

  load(key: Key): Promise<Value> {
    return new Promise<Value>((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => void this.dispatch());
      this.pending.push({ key, resolve, reject });
    });
  }

  private async dispatch(): Promise<void> {
    const pending = this.pending;
    this.pending = [];
    try {
      const values = await this.batch([...new Set(pending.map((p) => p.key))]);
      for (const { key, resolve, reject } of pending)
        if (values.has(key)) resolve(values.get(key)!);
        else reject(new Error(`batch loader: nothing loaded for ${String(key)}`));
    } catch (error) {
      for (const { reject } of pending) reject(error);
    }
  }
}
