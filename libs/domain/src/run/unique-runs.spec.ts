import { jobDefinition } from '../job/job-defaults';
import { DomainError } from '../domain-error';
import { holdsKey, keptByState, runUnique } from './unique-runs';

describe('unique runs', () => {
  const now = new Date('2026-12-07T10:00:00Z');

  it('records the job rule a run holds its key by, while-pending when the job names none', () => {
    expect(runUnique('k', undefined, now)).toEqual({ key: 'k', scope: 'while-pending' });
    expect(runUnique('k', { scope: 'while-not-finished' }, now)).toEqual({ key: 'k', scope: 'while-not-finished' });
    expect(runUnique('k', { scope: 'for', seconds: 90 }, now)).toEqual({
      key: 'k',
      scope: 'for',
      until: '2026-12-07T10:01:30.000Z',
    });
  });

  it.each([
    ['while-pending', 'scheduled', true],
    ['while-pending', 'ready', true],
    ['while-pending', 'retry_wait', true],
    ['while-pending', 'leased', false],
    ['while-pending', 'succeeded', false],
    ['while-not-finished', 'leased', true],
    ['while-not-finished', 'retry_wait', true],
    ['while-not-finished', 'succeeded', false],
    ['while-not-finished', 'dead', false],
    ['while-not-finished', 'cancelled', false],
  ] as const)('%s: a run %s holds its key: %s', (scope, state, holds) => {
    expect(holdsKey({ key: 'k', scope }, state, now)).toBe(holds);
  });

  it('keeps a key in the row while the run may hold it: by its state, or always under a rule of a time', () => {
    expect(keptByState({ key: 'k', scope: 'while-pending' }, 'leased')).toBe(false);
    expect(keptByState({ key: 'k', scope: 'while-not-finished' }, 'leased')).toBe(true);
    expect(keptByState({ key: 'k', scope: 'while-not-finished' }, 'dead')).toBe(false);
    expect(keptByState({ key: 'k', scope: 'for', until: '2026-12-07T10:00:00.000Z' }, 'succeeded')).toBe(true);
  });

  it('for: holds the key until its time, whatever its state', () => {
    const unique = runUnique('k', { scope: 'for', seconds: 60 }, now);
    expect(holdsKey(unique, 'succeeded', new Date('2026-12-07T10:00:59Z'))).toBe(true);
    expect(holdsKey(unique, 'scheduled', new Date('2026-12-07T10:01:00Z'))).toBe(false);
  });

  it('takes a rule of a time only with its seconds, and seconds only with it', () => {
    const define = (unique: { scope: 'for' | 'while-pending'; seconds?: number | null }) =>
      jobDefinition('ops.sync', 'ops', { queue: 'ops', unique });
    expect(define({ scope: 'for', seconds: 60 }).unique).toEqual({ scope: 'for', seconds: 60 });
    expect(define({ scope: 'while-pending', seconds: null }).unique).toEqual({ scope: 'while-pending' });
    expect(() => define({ scope: 'for' })).toThrow(DomainError);
    expect(() => define({ scope: 'while-pending', seconds: 5 })).toThrow(/only with scope for/);
  });
});
