import { mergeServerLogs, serverPhaseChecks, type ServerEvent, type ServerPhase } from './server-phase-checks';

const event = (runId: string, revision: number, type: string, id = `${runId}#${revision}`): ServerEvent => ({
  id,
  streamId: `run-${runId}`,
  revision: BigInt(revision),
  type,
  data: {},
});
/** Runs a and b on shard 0, c on shard 1; the map places 0 on `target` (moved there from `source`), 1 on `standby`. */
const holderOf = (streamId: string): string | undefined =>
  ({ 'run-a': 'target', 'run-b': 'target', 'run-c': 'standby' })[streamId];
const history = (runId: string): ServerEvent[] => [
  event(runId, 0, 'RunScheduled'),
  event(runId, 1, 'RunLeased'),
  event(runId, 2, 'RunSucceeded'),
];

function phase(logs: Parameters<typeof mergeServerLogs>[0]): ServerPhase {
  return {
    merged: mergeServerLogs(logs, holderOf),
    killed: { done: true, figure: 'down 6.0 s' },
    promoted: { done: true, figure: 'shards 1 after 6.2 s' },
    moved: { state: 'not available' },
    promotedRuns: { acknowledged: ['c'], committed: new Map([['run-c', 1n]]) },
  };
}
const violated = (p: ServerPhase): string[] => serverPhaseChecks(p).flatMap((c) => (c.violated ? [c.name] : []));

describe('the chaos run’s servers, merged and checked', () => {
  const control = { server: 'control', events: [{ ...event('x', 0, 'JobDefined'), streamId: 'job-x' }] };

  it('takes each run from the server holding its shard, once, in revision order, and counts copies left', () => {
    const merged = mergeServerLogs(
      [
        control,
        { server: 'source', events: history('a').slice(0, 2) },
        { server: 'target', events: [...history('b'), ...history('a').reverse()] },
        { server: 'standby', events: history('c') },
      ],
      holderOf,
    );
    expect(merged.strayed).toEqual([]);
    expect(merged.copiesLeft).toBe(1);
    expect(merged.events.filter((e) => e.streamId === 'run-a').map((e) => e.type)).toEqual([
      'RunScheduled',
      'RunLeased',
      'RunSucceeded',
    ]);
    expect(merged.events).toHaveLength(10);
  });

  it('finds an event written to a shard’s former server after the move, missing from its new one', () => {
    const late = event('a', 3, 'RunReplayed');
    const p = phase([
      control,
      { server: 'source', events: [...history('a'), late] },
      { server: 'target', events: [...history('a'), ...history('b')] },
      { server: 'standby', events: history('c') },
    ]);
    expect(violated(p)).toEqual(['run events found only off their shard’s server (copies left)']);
    expect(serverPhaseChecks(p)[0]!.examples).toEqual([
      'run-a@3 RunReplayed: on source, not on target, which holds its shard',
    ]);
  });

  it('passes the phase with every fault done, and the move not available', () => {
    const p = phase([control, { server: 'target', events: history('a') }, { server: 'standby', events: history('c') }]);
    expect(violated(p)).toEqual([]);
    expect(serverPhaseChecks(p).map((c) => c.value)).toEqual([
      '0 (0)',
      'down 6.0 s',
      'shards 1 after 6.2 s',
      'not available',
      '1 / 1, 0 lost',
    ]);
  });

  it('finds a run the promoted server acknowledged missing after the promotion, and events it had committed', () => {
    const shortened = { server: 'standby', events: history('c').slice(0, 1) };
    expect(violated(phase([control, shortened]))).toEqual([
      'promotion: acknowledged runs / streams committed at the kill, none lost',
    ]);
    expect(violated(phase([control]))).toEqual([
      'promotion: acknowledged runs / streams committed at the kill, none lost',
    ]);
  });

  it('finds a fault not done, and a move that failed', () => {
    const p = phase([control, { server: 'standby', events: history('c') }]);
    expect(violated({ ...p, promoted: { done: false, why: 'the map does not place the shards on it' } })).toEqual([
      'fault: standby promoted, the shard map pointing at it',
    ]);
    expect(violated({ ...p, moved: { state: 'failed', why: 'exit 1: refused' } })).toEqual([
      'fault: shard moved (chronicle shards move)',
    ]);
  });
});
