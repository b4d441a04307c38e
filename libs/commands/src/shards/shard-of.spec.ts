import { createHash } from 'node:crypto';
import { RUN_ID_PATTERN } from '@chronicle/domain';
import { derivedRunId, derivedRunIdBefore, madeRunId, scheduledRunId, scheduledRunIdBefore } from '../runs/new-run';
import { runSlot, shardOf, slotOf, SLOTS } from './shard-of';

const JOBS = Array.from({ length: 500 }, (_, i) => `team-${i % 7}.job-${i}`);

describe('run ids that name their slot', () => {
  it("names the job's slot in every new run id, made or derived", () => {
    for (const job of JOBS.slice(0, 50)) {
      for (const id of [madeRunId(job), derivedRunId(job, 'key'), scheduledRunId(job, new Date(0))]) {
        expect(id).toMatch(RUN_ID_PATTERN);
        expect(id).toMatch(/^run_[0-9a-f]{12}8[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
        expect(runSlot(id)).toBe(slotOf(job));
      }
    }
  });

  it('gives the shard of the job for every shard count that divides the slots', () => {
    for (let shards = 1; shards <= 1024; shards *= 2) {
      expect(SLOTS % shards).toBe(0);
      for (const job of JOBS) expect(runSlot(madeRunId(job))! % shards).toBe(shardOf(job, shards));
    }
  });

  it('keeps made ids in the order they were made, and derived ids stable for the same job and key', async () => {
    const first = madeRunId('a.job');
    await new Promise((resolve) => setTimeout(resolve, 2));
    expect(madeRunId('a.job') > first).toBe(true);
    expect(derivedRunId('a.job', 'k')).toBe(derivedRunId('a.job', 'k'));
    expect(derivedRunId('a.job', 'k')).not.toBe(derivedRunId('a.job', 'k2'));
    expect(derivedRunId('a.job', 'k')).not.toBe(derivedRunId('b.job', 'k'));
  });

  it('names no slot in an id made before, and derives that id as it was derived then', () => {
    expect(runSlot('run_01a24d1548e9750da5db114bf97b832b')).toBeUndefined(); // a UUIDv7 id
    expect(runSlot('run_0000000000008fffb000000000000000')).toBe(0xfff);
    expect(runSlot('run_abc')).toBeUndefined();
    const then = (job: string, key: string): string =>
      `run_${createHash('sha256').update(job).update('\u0000').update(key).digest('base64url').slice(0, 27)}`;
    expect(derivedRunIdBefore('billing.invoices', 'invoice-7')).toBe(then('billing.invoices', 'invoice-7'));
    const nominal = new Date('2026-03-29T01:30:00Z');
    expect(scheduledRunIdBefore('ops.nightly', nominal)).toBe(then('ops.nightly', `schedule@${nominal.toISOString()}`));
    expect(runSlot(derivedRunIdBefore('billing.invoices', 'invoice-7'))).toBeUndefined();
  });
});
