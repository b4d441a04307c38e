import { assertUsableSchedule, scheduleFireTimes } from './fire-times';
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

  // Each held the API's event loop, for good (rrule stepping towards an hour or a minute it never lands
  // on) or for seconds (walked to the year 9999); INTERVAL=0 was a 500.
  it.each([
    ['FREQ=HOURLY;BYHOUR=25', 'BYHOUR=25 is outside 0 to 23'],
    ['FREQ=MINUTELY;BYMINUTE=60', 'BYMINUTE=60 is outside 0 to 59'],
    ['FREQ=YEARLY;BYYEARDAY=367', 'BYYEARDAY=367 is outside 1 to 366 or -366 to -1'],
    ['FREQ=DAILY;INTERVAL=0', 'INTERVAL=0 is not 1 or more'],
    ['FREQ=DAILY;INTERVAL=-1', 'INTERVAL=-1 is not 1 or more'],
    ['FREQ=HOURLY;INTERVAL=2;BYHOUR=1', 'FREQ=HOURLY;INTERVAL=2 from DTSTART never reaches BYHOUR=1'],
    ['FREQ=MINUTELY;INTERVAL=3600;BYMINUTE=30', 'FREQ=MINUTELY;INTERVAL=3600 from DTSTART never reaches BYMINUTE=30'],
    ['FREQ=MINUTELY;INTERVAL=120;BYHOUR=9', 'FREQ=MINUTELY;INTERVAL=120 with BYHOUR: write it as FREQ=HOURLY'],
    // DTSTART, 2026-01-01, is a Thursday.
    ['FREQ=DAILY;INTERVAL=7;BYDAY=TU', "every INTERVAL=7 falls on DTSTART's weekday, never on BYDAY"],
    ['FREQ=MINUTELY\nEXRULE:FREQ=MINUTELY', 'EXRULE is deprecated: use EXDATE'],
    ['FREQ=DAILY;COUNT=10001', 'COUNT is counted from DTSTART: at most 10000, from 1970 on'],
    [
      'DTSTART:19000101T000000\nRRULE:FREQ=MINUTELY;COUNT=10',
      'COUNT is counted from DTSTART: at most 10000, from 1970 on',
    ],
  ])('refuses %p, which rrule would walk without end: %s', (rrule, message) => {
    expect(() => spec({ rrule, timeZone: 'UTC' })).toThrow(`schedule.rrule: ${message}`);
  });

  it.each([
    'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30',
    'FREQ=MINUTELY;BYMONTH=4;BYMONTHDAY=31',
    'FREQ=HOURLY;INTERVAL=5;BYMONTH=2;BYMONTHDAY=30;BYHOUR=3',
    'DTSTART:19700101T000000\nRRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30;COUNT=10000',
  ])(
    'finds that %s never fires, without walking to the year 9999',
    (rrule) => {
      expect(() => assertUsableSchedule(spec({ rrule, timeZone: 'UTC' }), new Date('2026-11-30T10:11:00Z'))).toThrow(
        'schedule.rrule: never fires after now',
      );
    },
    // A walk to 9999 took 10 to 12 s; the probe walks one 400-year cycle of years, well under a second alone.
    8_000,
  );

  it('finds what fires rarely however far ahead it is, the count asked for', () => {
    const leapDays = spec({ rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=6', timeZone: 'Europe/Berlin' });
    expect(iso(scheduleFireTimes(leapDays, new Date('2026-11-30T10:11:00Z'), 2))).toEqual([
      '2028-02-29T05:00:00Z',
      '2032-02-29T05:00:00Z',
    ]);
    const yearly = spec({ rrule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29', timeZone: 'UTC' });
    expect(iso(scheduleFireTimes(yearly, new Date('2026-12-02T00:00:00Z'), 3))).toEqual([
      '2028-02-29T00:00:00Z',
      '2032-02-29T00:00:00Z',
      '2036-02-29T00:00:00Z',
    ]);
    // A Monday 29 February: 28 years apart, then 40 (2100 is no leap year).
    const mondays = spec({ rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO', timeZone: 'UTC' });
    expect(iso(scheduleFireTimes(mondays, new Date('2026-12-02T00:00:00Z'), 3))).toEqual([
      '2044-02-29T00:00:00Z',
      '2072-02-29T00:00:00Z',
      '2112-02-29T00:00:00Z',
    ]);
    expect(() => assertUsableSchedule(mondays, new Date('2026-12-02T00:00:00Z'))).not.toThrow();
    // Every minute of those days, in the zone: the walk does not step minute by minute through the years between.
    const minutely = spec({ rrule: 'FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO', timeZone: 'Europe/Berlin' });
    expect(iso(scheduleFireTimes(minutely, new Date('2026-12-02T00:00:00Z'), 2))).toEqual([
      '2044-02-28T23:00:00Z',
      '2044-02-28T23:01:00Z',
    ]);
  });

  it.each(['FREQ=DAILY;BYSETPOS=2', 'FREQ=WEEKLY;BYDAY=MO,TU;BYSETPOS=3'])(
    'refuses %s: a BYSETPOS past every occurrence of a period never fires',
    (rrule) => {
      expect(() => parseRrule(rrule)).toThrow(/BYSETPOS/);
    },
  );
});
