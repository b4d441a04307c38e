import {
  decide,
  DomainError,
  evolve,
  foldRun,
  type PresentRun,
  type RunCommand,
  type RunScheduledData,
} from '@chronicle/domain';
import type { LogLevel } from '@chronicle/platform';
import { capturedLogger } from '@chronicle/testing';
import type { RunDecision } from './run-batch';
import { RunLog } from './run-log';

const T0 = new Date('2026-03-15T01:00:00.000Z');
const scheduled: RunScheduledData = {
  runId: 'r1',
  job: 'billing.charge',
  team: 'billing',
  queue: 'billing',
  priority: 'default',
  dueAt: T0.toISOString(),
  payload: { card: 'SECRET-PAYLOAD' },
  idempotencyKey: 'k1',
  retry: { maxAttempts: 1, baseSeconds: 0, maxSeconds: 0 },
  timeoutSeconds: 60,
  source: 'api',
  jobVersion: 1,
};

/** The decision `command` makes on `before`, as decideAndAppendBatches hands it on. */
function decision(before: PresentRun, command: RunCommand): RunDecision {
  const events = decide(command, before);
  return { before, after: events.reduce(evolve, before) as PresentRun, events };
}

function runLogAt(level: LogLevel) {
  const { logger, lines } = capturedLogger({ level });
  return { runLog: new RunLog(logger), lines };
}

const ready = foldRun(decide({ type: 'ScheduleRun', run: scheduled }, foldRun([]))) as PresentRun;
const lease = decision(ready, { type: 'LeaseRun', workerId: 'w1', leaseSeconds: 30, now: T0 });
const expiry = decision(lease.after, { type: 'ExpireLease', now: new Date(T0.getTime() + 31_000), draw: 0.5 });
const metadata = { actor: 'worker:billing:w1', schemaVersion: 1 };

describe('the lines about runs (RunLog)', () => {
  it("writes a lease at debug with the run's id, job, attempt and fencing token, never its payload", () => {
    const { runLog, lines } = runLogAt('debug');
    runLog.decided([lease], metadata);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'run leased',
        runId: 'r1',
        job: 'billing.charge',
        attempt: 1,
        fencingToken: 1,
        event: 'RunLeased',
        state: 'leased',
        actor: 'worker:billing:w1',
        workerId: 'w1',
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('SECRET-PAYLOAD');
  });

  it('writes an expiry and the dead letter it makes at info, with the token of the lease that ended', () => {
    const { runLog, lines } = runLogAt('info');
    runLog.decided([lease], metadata);
    runLog.decided([expiry], { actor: 'scheduler:lease-reaper' });
    expect(lines.map((l) => [l['level'], l['msg'], l['event'], l['attempt'], l['fencingToken']])).toEqual([
      ['info', 'lease expired', 'LeaseExpired', 1, 1],
      ['info', 'run dead-lettered', 'RunDead', 1, 1],
    ]);
    expect(lines[1]).toMatchObject({ reason: 'lease_expired', state: 'dead', actor: 'scheduler:lease-reaper' });
  });

  it('writes nothing at warn, and a refusal only at debug', () => {
    const quiet = runLogAt('warn');
    quiet.runLog.decided([lease, expiry], metadata);
    quiet.runLog.refused('r1', 1, new DomainError('stale-lease', 'stale'));
    expect(quiet.lines).toEqual([]);
    const chatty = runLogAt('debug');
    chatty.runLog.refused('r1', 1, new DomainError('stale-lease', 'stale'));
    expect(chatty.lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        msg: 'run call refused',
        runId: 'r1',
        fencingToken: 1,
        code: 'stale-lease',
      }),
    ]);
  });
});
