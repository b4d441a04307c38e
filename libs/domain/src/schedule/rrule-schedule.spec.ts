import { scheduleFireTimes } from './fire-times';
import { parseScheduleSpec } from './schedule-spec';

const spec = (schedule: Record<string, unknown>) => parseScheduleSpec(schedule, () => true);
const iso = (dates: Date[]): string[] => dates.map((d) => d.toISOString().replace('.000Z', 'Z'));

describe('RRULE schedules, in the zone wall-clock', () => {
  it('fires on the first Monday of each month at 09:00 New York time, across the DST change', () => {
    const schedule = spec({ rrule: 'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1;BYHOUR=9;BYMINUTE=0', timeZone: 'America/New_York' });
    expect(iso(scheduleFireTimes(schedule, new Date('2026-01-01T00:00:00Z'), 4))).toEqual(['2026-01-05T14:00:00Z', '2026-02-02T14:00:00Z', '2026-03-02T14:00:00Z', '2026-04-06T13:00:00Z']);
  });

  it('honours DTSTART, COUNT and EXDATE, and the DST gap rule', () => {
    const schedule = spec({ rrule: 'DTSTART:20260328T023000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE:20260330T023000', timeZone: 'Europe/Berlin' });
    // 28 March 02:30 CET; 29 March 02:30 falls in the gap: 03:00 CEST; 30 March excluded; 31 March 02:30 CEST; then COUNT is spent.
    expect(iso(scheduleFireTimes(schedule, new Date('2026-03-01T00:00:00Z'), 5))).toEqual(['2026-03-28T01:30:00Z', '2026-03-29T01:00:00Z', '2026-03-31T00:30:00Z']);
  });

  it.each([
    [{ rrule: 'DTSTART:20260101T090000Z\nRRULE:FREQ=DAILY' }, /without Z or TZID/],
    [{ rrule: 'FREQ=SOMETIMES' }, /rrule/],
    [{ rrule: 'BYHOUR=9' }, /FREQ/],
  ])('refuses %p as an invalid schedule naming rrule', (schedule, message) => {
    expect(() => spec({ ...schedule, timeZone: 'UTC' })).toThrow(message);
    expect(() => spec({ ...schedule, timeZone: 'UTC' })).toThrow(/schedule\.rrule/);
  });
});
