import { DomainError } from '../domain-error';
import { dueTimeOf } from './due-time';

const NOW = new Date('2026-03-15T01:00:00.000Z');

describe('dueTimeOf', () => {
  it('is runAt, now plus delaySeconds, or now', () => {
    expect(dueTimeOf({ runAt: '2030-01-01T00:00:00Z' }, NOW)).toEqual(new Date('2030-01-01T00:00:00Z'));
    expect(dueTimeOf({ delaySeconds: 60 }, NOW)).toEqual(new Date('2026-03-15T01:01:00.000Z'));
    expect(dueTimeOf({}, NOW)).toEqual(NOW);
  });

  it('takes null as not given, as the API does for its optional fields', () => {
    expect(dueTimeOf({ runAt: null, delaySeconds: null }, NOW)).toEqual(NOW);
    expect(dueTimeOf({ runAt: null, delaySeconds: 60 }, NOW)).toEqual(new Date('2026-03-15T01:01:00.000Z'));
  });

  it('refuses both, saying where', () => {
    expect(() => dueTimeOf({ runAt: '2030-01-01T00:00:00Z', delaySeconds: 5 }, NOW, 'runs[2]: ')).toThrow(
      new DomainError('validation-error', 'runs[2]: give runAt or delaySeconds, not both'),
    );
  });
});
