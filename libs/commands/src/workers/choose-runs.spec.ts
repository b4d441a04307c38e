import { DEFAULT_PRIORITY_WEIGHTS, type Priority } from '@chronicle/domain';
import type { ClaimCandidateRow } from './claim-candidates.sql';
import { chooseRuns, TURN_MS } from './choose-runs';

type Candidate = ClaimCandidateRow & { readonly server: string };

/** `count` candidates of a job on a server, each a millisecond younger than the one before. */
function candidates(
  server: string,
  job: string,
  team: string,
  priority: Priority,
  count: number,
  { weight = 1, since = 0, step = 1 } = {},
): Candidate[] {
  return Array.from({ length: count }, (_, i) => ({
    server,
    run_id: `${job}-${i}`,
    job,
    team,
    queue: 'shared',
    priority,
    available_at: new Date(1_700_000_000_000 + since + i * step),
    weight,
  }));
}

/** A seeded generator (mulberry32): the phases differ from batch to batch, the test's outcome does not. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Of `batches` batches of `max` chosen from the same candidates, the percentage of each job. */
function shares(all: readonly Candidate[], max: number, batches: number, key: (c: Candidate) => string) {
  const random = seeded(42);
  const counted = new Map<string, number>();
  for (let b = 0; b < batches; b++)
    for (const run of chooseRuns(all, DEFAULT_PRIORITY_WEIGHTS, max, random))
      counted.set(key(run), (counted.get(key(run)) ?? 0) + 1);
  return (of: string): number => (100 * (counted.get(of) ?? 0)) / (max * batches);
}

describe('chooseRuns: the dispatch policy over the candidates of several servers', () => {
  it('splits a batch 70/25/5 across the priorities, each on a server of its own', () => {
    const all = [
      ...candidates('server-0', 'b.critical', 'team-b', 'critical', 200),
      ...candidates('server-1', 'b.default', 'team-b', 'default', 200),
      ...candidates('server-2', 'a.flood', 'team-a', 'bulk', 200),
    ];
    const share = shares(all, 100, 200, (run) => run.priority);
    expect(share('critical')).toBeCloseTo(70, 0);
    expect(share('default')).toBeCloseTo(25, 0);
    expect(share('bulk')).toBeCloseTo(5, 0);
  });

  it('gives the share of a priority without candidates to the others, in their ratio', () => {
    const all = [
      ...candidates('server-1', 'b.default', 'team-b', 'default', 200),
      ...candidates('server-2', 'a.flood', 'team-a', 'bulk', 200),
    ];
    const share = shares(all, 60, 200, (run) => run.priority);
    expect(share('default')).toBeCloseTo((100 * 25) / 30, 0);
    expect(share('bulk')).toBeCloseTo((100 * 5) / 30, 0);
  });

  it('serves the teams round-robin weighted by their grants, whichever servers their runs are on', () => {
    const all = [
      ...candidates('server-0', 'd.work', 'team-d', 'default', 30, { weight: 2 }),
      ...candidates('server-1', 'd.other', 'team-d', 'default', 30, { weight: 2 }),
      ...candidates('server-2', 'e.work', 'team-e', 'default', 60, { weight: 1 }),
    ];
    const share = shares(all, 30, 200, (run) => run.team);
    expect(share('team-d')).toBeCloseTo((100 * 2) / 3, 0);
    expect(share('team-e')).toBeCloseTo(100 / 3, 0);
  });

  it("takes a team's 10 runs within the first 2 batches of 10 behind another team's flood on another server", () => {
    let left = [
      ...candidates('server-1', 'a.flood', 'team-a', 'bulk', 1_000),
      ...candidates('server-0', 'b.few', 'team-b', 'bulk', 10, { since: 5_000 }),
    ];
    const random = seeded(7);
    const leased: Candidate[] = [];
    for (let batch = 0; batch < 2; batch++) {
      const chosen = chooseRuns(left, DEFAULT_PRIORITY_WEIGHTS, 10, random);
      leased.push(...chosen);
      left = left.filter((run) => !chosen.includes(run));
    }
    expect(leased.filter((run) => run.job === 'b.few')).toHaveLength(10);
  });

  it("without turns, takes a team's runs oldest first over the servers they are on", () => {
    // The team's runs alternate between two servers by age: the batch is its 6 oldest, in order.
    const all = [
      ...candidates('server-0', 'c.even', 'team-c', 'default', 5, { since: 0, step: 2 }),
      ...candidates('server-1', 'c.odd', 'team-c', 'default', 5, { since: 1, step: 2 }),
    ];
    const chosen = chooseRuns(all, DEFAULT_PRIORITY_WEIGHTS, 6, seeded(1));
    expect(chosen.map((run) => run.run_id)).toEqual([
      'c.even-0',
      'c.odd-0',
      'c.even-1',
      'c.odd-1',
      'c.even-2',
      'c.odd-2',
    ]);
    expect(chooseRuns(all, DEFAULT_PRIORITY_WEIGHTS, 100, seeded(1))).toHaveLength(10);
  });

  it("takes a team's runs from the server whose turn it is, within TURN_MS of age a step, the shares unchanged", () => {
    const all = [
      ...candidates('server-0', 'b.critical', 'team-b', 'critical', 100),
      ...candidates('server-1', 'c.critical', 'team-b', 'critical', 100, { since: TURN_MS / 2 }),
      ...candidates('server-2', 'a.bulk', 'team-a', 'bulk', 100),
    ];
    const servers = ['server-0', 'server-1', 'server-2'];
    const random = seeded(7);
    const batches = [0, 1, 2].map((first) =>
      chooseRuns(all, DEFAULT_PRIORITY_WEIGHTS, 20, random, (run) => (servers.indexOf(run.server) - first + 3) % 3),
    );
    // Turns 0 and 2: team-b's critical runs from server-0 (the older ones); turn 1 from server-1, whose runs are younger
    // by less than a turn's TURN_MS.
    expect(batches.map((b) => [...new Set(b.filter((r) => r.priority === 'critical').map((r) => r.server))])).toEqual([
      ['server-0'],
      ['server-1'],
      ['server-0'],
    ]);
    for (const batch of batches)
      expect(batch.filter((r) => r.priority === 'critical').length).toBeGreaterThanOrEqual(13);
  });

  it('still takes a run older by more than its turn first', () => {
    const all = [
      ...candidates('server-0', 'old', 'team-b', 'default', 5),
      ...candidates('server-1', 'young', 'team-b', 'default', 5, { since: 3 * TURN_MS }),
    ];
    const chosen = chooseRuns(all, DEFAULT_PRIORITY_WEIGHTS, 5, seeded(3), (run) =>
      run.server === 'server-1' ? 0 : 2,
    );
    expect(chosen.map((run) => run.job)).toEqual(['old', 'old', 'old', 'old', 'old']);
  });
});
