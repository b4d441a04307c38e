import { formatWithOffset, planScheduledRuns, RUN_ALL_CAP, type PlanInput } from './plan-scheduled-runs';
import type { ScheduleSpec } from './schedule-spec';
import { DEFAULT_DST_POLICY } from './zoned-time';

const everyMinute: ScheduleSpec = {
  cron: '* * * * *',
  timeZone: 'UTC',
  jitterSeconds: 0,
  missedRunPolicy: 'run_once',
  dstPolicy: DEFAULT_DST_POLICY,
  overlapPolicy: 'buffer_one',
};
const now = new Date('2026-06-01T12:00:30Z');
const input = (overrides: Partial<PlanInput> = {}): PlanInput => ({
  jobName: 'ops.tick',
  spec: everyMinute,
  cursor: null,
  now,
  lookaheadSeconds: 60,
  runAllCap: RUN_ALL_CAP,
  ...overrides,
});
const at = (runs: ReturnType<typeof planScheduledRuns>['runs']): string[] =>
  runs.map((r) => `${r.source}:${r.nominalAt.toISOString().slice(11, 16)}`);

describe('planning scheduled runs', () => {
  it('starts a new schedule now: the fire times within the lookahead, none from its past', () => {
    const { runs, cursor } = planScheduledRuns(input());
    expect(at(runs)).toEqual(['schedule:12:01']);
    expect(cursor.toISOString()).toBe('2026-06-01T12:01:30.000Z');
  });

  it('continues from the cursor without repeating or losing a fire time', () => {
    const first = planScheduledRuns(input());
    const second = planScheduledRuns(input({ cursor: first.cursor, now: new Date('2026-06-01T12:01:30Z') }));
    expect(at(second.runs)).toEqual(['schedule:12:02']);
  });

  describe('after 3 minutes down', () => {
    const cursor = new Date('2026-06-01T11:57:30Z');
    it.each([
      ['run_once', ['catch_up:12:00', 'schedule:12:01']],
      ['run_all', ['catch_up:11:58', 'catch_up:11:59', 'catch_up:12:00', 'schedule:12:01']],
      ['skip', ['schedule:12:01']],
    ] as const)('%s', (missedRunPolicy, expected) => {
      expect(at(planScheduledRuns(input({ cursor, spec: { ...everyMinute, missedRunPolicy } })).runs)).toEqual(
        expected,
      );
    });
  });

  it('caps run_all to the latest runs after a long outage', () => {
    const { runs } = planScheduledRuns(
      input({
        cursor: new Date('2026-05-31T12:00:00Z'),
        spec: { ...everyMinute, missedRunPolicy: 'run_all' },
        runAllCap: 10,
      }),
    );
    expect(runs.filter((r) => r.source === 'catch_up')).toHaveLength(10);
    expect(at(runs).slice(-2)).toEqual(['catch_up:12:00', 'schedule:12:01']);
  });

  it('names the next fire time after the cursor: when the job is due for materialising again', () => {
    expect(planScheduledRuns(input()).nextFireAt?.toISOString()).toBe('2026-06-01T12:02:00.000Z');
    const hourly: ScheduleSpec = { ...everyMinute, cron: '0 * * * *' };
    const plan = planScheduledRuns(input({ spec: hourly, now: new Date('2026-06-01T12:59:10Z') }));
    expect(at(plan.runs)).toEqual(['schedule:13:00']);
    expect(plan.nextFireAt?.toISOString()).toBe('2026-06-01T14:00:00.000Z');
    // Nothing within the lookahead: the cursor moves, the next fire time stays.
    const quiet = planScheduledRuns(
      input({ spec: hourly, cursor: plan.cursor, now: new Date('2026-06-01T13:05:00Z') }),
    );
    expect(quiet.runs).toEqual([]);
    expect(quiet.nextFireAt?.toISOString()).toBe('2026-06-01T14:00:00.000Z');
  });

  it('has no next fire time once an RRULE has run its COUNT', () => {
    const spec: ScheduleSpec = {
      rrule: 'DTSTART:20260601T120000\nRRULE:FREQ=HOURLY;COUNT=2',
      timeZone: 'UTC',
      jitterSeconds: 0,
      missedRunPolicy: 'run_once',
      dstPolicy: DEFAULT_DST_POLICY,
      overlapPolicy: 'buffer_one',
    };
    const plan = planScheduledRuns(
      input({ spec, now: new Date('2026-06-01T12:59:30Z'), cursor: new Date('2026-06-01T12:30:00Z') }),
    );
    expect(at(plan.runs)).toEqual(['schedule:13:00']);
    expect(plan.nextFireAt).toBeNull();
  });

  it('offsets the due time by the job jitter, keeping the nominal time in the idempotency key', () => {
    const spec: ScheduleSpec = {
      cron: '0 2 * * *',
      timeZone: 'Europe/Berlin',
      jitterSeconds: 60,
      missedRunPolicy: 'run_once',
      dstPolicy: DEFAULT_DST_POLICY,
      overlapPolicy: 'buffer_one',
    };
    const { runs } = planScheduledRuns(
      input({ jobName: 'billing.export-invoices', spec, now: new Date('2026-03-15T00:59:30Z') }),
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]!.idempotencyKey).toBe('billing.export-invoices@2026-03-15T02:00:00+01:00');
    const jitterMs = runs[0]!.dueAt.getTime() - runs[0]!.nominalAt.getTime();
    expect(jitterMs).toBeGreaterThanOrEqual(0);
    expect(jitterMs).toBeLessThan(60_000);
  });

  it('formats instants with the zone offset, half and quarter hours included', () => {
    expect(formatWithOffset(new Date('2026-03-15T01:00:00Z'), 'Europe/Berlin')).toBe('2026-03-15T02:00:00+01:00');
    expect(formatWithOffset(new Date('2026-06-01T03:15:00Z'), 'Asia/Kathmandu')).toBe('2026-06-01T09:00:00+05:45');
    expect(formatWithOffset(new Date('2026-01-10T12:00:00Z'), 'America/St_Johns')).toBe('2026-01-10T08:30:00-03:30');
  });
});
