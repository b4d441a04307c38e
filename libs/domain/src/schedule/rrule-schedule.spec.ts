import { scheduleFireTimes } from './fire-times';
import { parseRrule } from './rrule-schedule';
import { parseScheduleSpec } from './schedule-spec';

const spec = (schedule: Record<string, unknown>) => parseScheduleSpec(schedule, () => true);
const iso = (dates: Date[]): string[] => dates.map((d) => d.toISOString().replace('.000Z', 'Z'));

describe('RRULE schedules, in the zone wall-clock', () => {
  it('fires on the first Monday of each month at 09:00 New York time, across the DST change', () => {
    const schedule = spec({
      rrule: 'FREQ=MONTHLY;BYDAY=MO;BYSETPOS=1;BYHOUR=9;BYMINUTE=0',
      timeZone: 'America/New_York',
    });
    expect(iso(scheduleFireTimes(schedule, new Date('2026-01-01T00:00:00Z'), 4))).toEqual([
      '2026-01-05T14:00:00Z',
      '2026-02-02T14:00:00Z',
      '2026-03-02T14:00:00Z',
      '2026-04-06T13:00:00Z',
    ]);
  });

  it('honours DTSTART, COUNT and EXDATE, and the DST gap rule', () => {
    const schedule = spec({
      rrule: 'DTSTART:20260328T023000\nRRULE:FREQ=DAILY;COUNT=4\nEXDATE:20260330T023000',
      timeZone: 'Europe/Berlin',
    });
    // 28 March 02:30 CET; 29 March 02:30 falls in the gap: 03:00 CEST; 30 March excluded; 31 March 02:30 CEST;
    // then COUNT is spent.
    expect(iso(scheduleFireTimes(schedule, new Date('2026-03-01T00:00:00Z'), 5))).toEqual([
      '2026-03-28T01:30:00Z',
      '2026-03-29T01:00:00Z',
      '2026-03-31T00:30:00Z',
    ]);
  });

  it.each([
    [{ rrule: 'DTSTART:20260101T090000Z\nRRULE:FREQ=DAILY' }, /without Z or TZID/],
    [{ rrule: 'FREQ=SOMETIMES' }, /rrule/],
    [{ rrule: 'BYHOUR=9' }, /FREQ/],
  ])('refuses %p as an invalid schedule naming rrule', (schedule, message) => {
    expect(() => spec({ ...schedule, timeZone: 'UTC' })).toThrow(message);
    expect(() => spec({ ...schedule, timeZone: 'UTC' })).toThrow(/schedule\.rrule/);
  });

  it('fires a minutely rule every INTERVAL minutes, in wall-clock time', () => {
    const schedule = spec({
      rrule: 'DTSTART:20260101T000000\nRRULE:FREQ=MINUTELY;INTERVAL=7',
      timeZone: 'Europe/Berlin',
    });
    // 333 days and 671 minutes after DTSTART: 11:11 CET. The lattice of 7 minutes passes 11:13 (480,193 = 7 x 68,599).
    expect(iso(scheduleFireTimes(schedule, new Date('2026-11-30T10:11:00Z'), 3))).toEqual([
      '2026-11-30T10:13:00Z',
      '2026-11-30T10:20:00Z',
      '2026-11-30T10:27:00Z',
    ]);
  });

  // A query starts its walk near `after`, not at DTSTART; the occurrences must be those of the walk from DTSTART.
  it.each([
    'FREQ=MINUTELY;INTERVAL=7',
    'FREQ=MINUTELY;INTERVAL=15;BYHOUR=9,17',
    'FREQ=HOURLY;INTERVAL=5;BYMINUTE=13',
    'FREQ=DAILY;INTERVAL=3;BYHOUR=9,17;BYMINUTE=30',
    'FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;BYHOUR=8;BYMINUTE=0',
    'FREQ=WEEKLY;INTERVAL=3',
  ])('%s: the same fire times as a walk from DTSTART', (rule) => {
    const text = `DTSTART:20260103T041700\nRRULE:${rule}`;
    const after = new Date('2026-11-30T10:11:00Z');
    const fromDtstart = parseRrule(text).between(after, new Date('2028-01-01T00:00:00Z'), false).slice(0, 6);
    expect(iso(scheduleFireTimes(spec({ rrule: text, timeZone: 'UTC' }), after, 6))).toEqual(iso(fromDtstart));
  });
});
