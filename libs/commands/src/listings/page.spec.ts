import { DomainError } from '@chronicle/domain';
import { decodeTimeCursor, encodeCursor } from './page';

describe("a time listing's cursor (the runs listing's, the DLQ's)", () => {
  it('gives back the time and id it was made of', () => {
    expect(decodeTimeCursor(encodeCursor(['2026-12-06T09:00:00.000Z', 'run_1']), 'cursor')).toEqual({
      time: '2026-12-06T09:00:00.000Z',
      id: 'run_1',
    });
  });

  it.each([
    ["another listing's position", ['2764', '28']],
    ['a date without a time', ['2026-12-06', 'run_1']],
    ['a time JavaScript reads and PostgreSQL does not', ['December 6, 2026', 'run_1']],
  ])('refuses %s as a validation error, before any query', (_, key) => {
    expect(() => decodeTimeCursor(encodeCursor(key), 'cursor')).toThrow(DomainError);
    expect(() => decodeTimeCursor(encodeCursor(key), 'cursor')).toThrow('cursor is not a cursor this listing returned');
  });
});
