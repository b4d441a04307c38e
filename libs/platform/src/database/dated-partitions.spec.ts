import { utcWeek } from './dated-partitions';

describe('utcWeek', () => {
  it.each([
    ['2026-12-04T12:00:00.000Z', '2026-11-30'], // a Friday
    ['2026-11-30T00:00:00.000Z', '2026-11-30'], // its Monday's first instant
    ['2026-11-29T23:59:59.999Z', '2026-11-23'], // the Sunday before: the week before
    ['2026-12-06T23:59:59.999Z', '2026-11-30'], // its Sunday's last instant
    ['2027-01-01T08:00:00.000Z', '2026-12-28'], // across a year
    ['1970-01-01T00:00:00.000Z', '1969-12-29'], // day 0, a Thursday
    ['1969-12-28T12:00:00.000Z', '1969-12-22'], // before day 0, a Sunday
  ])('%s is in the week of Monday %s, asked in any order', (instant, monday) => {
    expect(utcWeek(new Date(instant))).toBe(monday);
    expect(utcWeek(new Date('2026-07-15T00:00:00Z'))).toBe('2026-07-13');
    expect(utcWeek(new Date(instant))).toBe(monday);
  });

  it('refuses an invalid date, as toISOString does', () => {
    expect(() => utcWeek(new Date(Number.NaN))).toThrow(RangeError);
  });
});
