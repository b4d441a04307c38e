/**
 * `work` on each of `items` (a run server, or what works on one) at once; resolves with their results.
 * A failure rejects once every item's work has ended, so that none outlives the pass that began it (a
 * periodic pass never runs twice at once, and stopping waits for the one under way).
 */
export async function onEach<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const ended = await Promise.allSettled(items.map(work));
  const failed = ended.find((e) => e.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return ended.map((e) => (e as PromiseFulfilledResult<R>).value);
}
