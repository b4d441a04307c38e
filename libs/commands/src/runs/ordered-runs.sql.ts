import type { RunScheduledData } from '@chronicle/domain';
import type { Queryable } from '@chronicle/platform';

/**
 * New runs with their places in their ordering keys' orders (RunScheduledData.ordering): for each job and
 * key named, its key's lock and the first seq to give (next_ordering_seqs, migrations/0042), then one seq
 * after the other to the key's runs in the batch's order. The locks are held until the unit of work
 * commits, with the runs' rows written: the next enqueue of a key, and a claim of its runs, see them.
 * Call it in the unit of work that appends the runs, before the append; a run whose key `orderingKeyOf`
 * does not name is returned as it is.
 */
export async function placeInKeyOrder(
  db: Queryable,
  runs: readonly RunScheduledData[],
  orderingKeyOf: (run: RunScheduledData) => string | undefined,
): Promise<RunScheduledData[]> {
  const id = (job: string, key: string): string => `${job}\u001f${key}`;
  const keys = new Map<string, { job: string; key: string }>();
  for (const run of runs) {
    const key = orderingKeyOf(run);
    if (key !== undefined) keys.set(id(run.job, key), { job: run.job, key });
  }
  if (keys.size === 0) return [...runs];
  const { rows } = await db.query<{ job: string; key: string; seq: string }>({
    name: 'next_ordering_seqs',
    text: 'SELECT job, key, seq FROM next_ordering_seqs($1::text[], $2::text[])',
    values: [[...keys.values()].map((k) => k.job), [...keys.values()].map((k) => k.key)],
  });
  const next = new Map(rows.map((r) => [id(r.job, r.key), Number(r.seq)]));
  return runs.map((run) => {
    const key = orderingKeyOf(run);
    if (key === undefined) return run;
    const seq = next.get(id(run.job, key))!;
    next.set(id(run.job, key), seq + 1);
    return { ...run, ordering: { key, seq } };
  });
}
