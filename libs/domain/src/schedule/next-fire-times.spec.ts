import { CronSyntaxError, parseCron } from './cron';
import { nextFireTimes } from './next-fire-times';
import { offsetMinutes } from './zoned-time';

const iso = (dates: Date[]): string[] => dates.map((d) => d.toISOString().replace('.000Z', 'Z'));
const fires = (
  cron: string,
  zone: string,
  after: string,
  count: number,
  policy?: Parameters<typeof nextFireTimes>[4],
): string[] => iso(nextFireTimes(parseCron(cron), zone, new Date(after), count, policy));

describe('cron parsing', () => {
  it('reads lists, ranges, steps, names, 7 as Sunday and the macros', () => {
    const spec = parseCron('*/15 9-17/4 1,15 jan-mar MON-FRI');
    expect([...spec.minutes]).toEqual([0, 15, 30, 45]);
    expect([...spec.hours]).toEqual([9, 13, 17]);
    expect([...spec.months]).toEqual([1, 2, 3]);
    expect([...spec.daysOfWeek]).toEqual([1, 2, 3, 4, 5]);
    expect([...parseCron('0 0 * * 7').daysOfWeek]).toEqual([0]);
    expect(parseCron('@daily')).toEqual(parseCron('0 0 * * *'));
    expect(parseCron('@hourly')).toEqual(parseCron('0 * * * *'));
  });

  it.each([
    ['0 0 0 2 * *', /5 fields/],
    ['60 * * * *', /minute/],
    ['* 24 * * *', /hour/],
    ['* * 0 * *', /day-of-month/],
    ['* * * 13 *', /month/],
    ['* * * * funday', /day-of-week/],
    ['5-1 * * * *', /backwards/],
  ])('refuses %p, naming the field', (cron, message) => {
    expect(() => parseCron(cron)).toThrow(CronSyntaxError);
    expect(() => parseCron(cron)).toThrow(message);
  });
});

describe('next fire times', () => {
  it('uses the classic OR when both day fields are restricted', () => {
    // The 13th of the month or any Friday, at noon UTC, from Thu 2026-11-12 (the 13th is a Friday too).
    expect(fires('0 12 13 * 5', 'UTC', '2026-11-12T00:00:00Z', 3)).toEqual([
      '2026-11-13T12:00:00Z',
      '2026-11-20T12:00:00Z',
      '2026-11-27T12:00:00Z',
    ]);
  });

  it('is strictly after the given instant and strictly increasing', () => {
    expect(fires('0 * * * *', 'UTC', '2026-01-01T10:00:00Z', 2)).toEqual([
      '2026-01-01T11:00:00Z',
      '2026-01-01T12:00:00Z',
    ]);
  });

  it('gives up on a cron that never fires', () => {
    expect(fires('0 0 30 2 *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([]);
    expect(fires('0 0 31 4,6,9,11 *', 'Europe/Berlin', '2026-01-01T00:00:00Z', 1)).toEqual([]);
  });

  it('finds what fires rarely however far ahead it is, the count asked for', () => {
    expect(fires('0 0 29 2 *', 'UTC', '2026-12-02T00:00:00Z', 3)).toEqual([
      '2028-02-29T00:00:00Z',
      '2032-02-29T00:00:00Z',
      '2036-02-29T00:00:00Z',
    ]);
    // 2100 is no leap year: eight years between two 29 Februaries.
    expect(fires('0 0 29 2 *', 'UTC', '2095-03-01T00:00:00Z', 2)).toEqual([
      '2096-02-29T00:00:00Z',
      '2104-02-29T00:00:00Z',
    ]);
    // The classic OR: the 29th or a Monday, in February.
    expect(fires('0 12 29 2 1', 'Europe/Berlin', '2027-02-28T00:00:00Z', 1)).toEqual(['2028-02-07T11:00:00Z']);
    // Many fire times on rare days, in a zone.
    const many = nextFireTimes(parseCron('0 0 29 2 *'), 'Europe/Berlin', new Date('2026-12-02T00:00:00Z'), 1001);
    expect(many).toHaveLength(1001);
    expect(many[1000]!.toISOString()).toBe('6152-02-28T23:00:00.000Z');
  });

  // Expected instants written out by hand from each zone's 2026 rules.
  describe.each([
    // zone, cron, after, expected fire times
    [
      'Europe/Berlin: spring-forward gap fires at 03:00 CEST',
      'Europe/Berlin',
      '30 2 * * *',
      '2026-03-27T12:00:00Z',
      ['2026-03-28T01:30:00Z', '2026-03-29T01:00:00Z', '2026-03-30T00:30:00Z'],
    ],
    [
      'Europe/Berlin: a whole gap of times collapses into one run',
      'Europe/Berlin',
      '0,15,30,45 2 * * *',
      '2026-03-29T00:00:00Z',
      ['2026-03-29T01:00:00Z', '2026-03-30T00:00:00Z'],
    ],
    [
      'Europe/Berlin: fall-back repeat fires once, at the first occurrence',
      'Europe/Berlin',
      '30 2 * * *',
      '2026-10-24T12:00:00Z',
      ['2026-10-25T00:30:00Z', '2026-10-26T01:30:00Z'],
    ],
    [
      'America/New_York: gap',
      'America/New_York',
      '30 2 * * *',
      '2026-03-07T12:00:00Z',
      ['2026-03-08T07:00:00Z', '2026-03-09T06:30:00Z'],
    ],
    [
      'America/New_York: repeat',
      'America/New_York',
      '30 1 * * *',
      '2026-10-31T12:00:00Z',
      ['2026-11-01T05:30:00Z', '2026-11-02T06:30:00Z'],
    ],
    [
      'Australia/Sydney (southern hemisphere): repeat in April',
      'Australia/Sydney',
      '30 2 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T15:30:00Z', '2026-04-05T16:30:00Z'],
    ],
    [
      'Australia/Sydney: gap in October',
      'Australia/Sydney',
      '30 2 * * *',
      '2026-10-03T00:00:00Z',
      ['2026-10-03T16:00:00Z', '2026-10-04T15:30:00Z'],
    ],
    [
      'Australia/Lord_Howe (30-minute shift): repeat',
      'Australia/Lord_Howe',
      '45 1 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T14:45:00Z', '2026-04-05T15:15:00Z'],
    ],
    [
      'Australia/Lord_Howe: gap of 30 minutes',
      'Australia/Lord_Howe',
      '15 2 * * *',
      '2026-10-03T00:00:00Z',
      ['2026-10-03T15:30:00Z', '2026-10-04T15:15:00Z'],
    ],
    [
      'Asia/Kathmandu (+05:45, no DST)',
      'Asia/Kathmandu',
      '0 9 * * *',
      '2026-06-01T00:00:00Z',
      ['2026-06-01T03:15:00Z', '2026-06-02T03:15:00Z'],
    ],
    [
      'Pacific/Chatham (45-minute offsets): repeat',
      'Pacific/Chatham',
      '0 3 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T13:15:00Z', '2026-04-05T14:15:00Z'],
    ],
    [
      'Pacific/Chatham: gap',
      'Pacific/Chatham',
      '0 3 * * *',
      '2026-09-26T00:00:00Z',
      ['2026-09-26T14:00:00Z', '2026-09-27T13:15:00Z'],
    ],
    [
      'America/St_Johns (-03:30): gap',
      'America/St_Johns',
      '30 2 * * *',
      '2026-03-08T00:00:00Z',
      ['2026-03-08T05:30:00Z', '2026-03-09T05:00:00Z'],
    ],
    [
      'Europe/Berlin 2027: gap',
      'Europe/Berlin',
      '30 2 * * *',
      '2027-03-27T12:00:00Z',
      ['2027-03-28T01:00:00Z', '2027-03-29T00:30:00Z'],
    ],
    [
      'Europe/Berlin 2027: repeat',
      'Europe/Berlin',
      '30 2 * * *',
      '2027-10-30T12:00:00Z',
      ['2027-10-31T00:30:00Z', '2027-11-01T01:30:00Z'],
    ],
    [
      'Europe/Berlin 2028: gap',
      'Europe/Berlin',
      '30 2 * * *',
      '2028-03-25T12:00:00Z',
      ['2028-03-26T01:00:00Z', '2028-03-27T00:30:00Z'],
    ],
    [
      'Europe/Berlin 2028: repeat',
      'Europe/Berlin',
      '30 2 * * *',
      '2028-10-28T12:00:00Z',
      ['2028-10-29T00:30:00Z', '2028-10-30T01:30:00Z'],
    ],
    [
      'America/New_York 2027: gap',
      'America/New_York',
      '30 2 * * *',
      '2027-03-13T12:00:00Z',
      ['2027-03-14T07:00:00Z', '2027-03-15T06:30:00Z'],
    ],
    [
      'America/New_York 2027: repeat',
      'America/New_York',
      '30 1 * * *',
      '2027-11-06T12:00:00Z',
      ['2027-11-07T05:30:00Z', '2027-11-08T06:30:00Z'],
    ],
    [
      'America/New_York 2028: gap',
      'America/New_York',
      '30 2 * * *',
      '2028-03-11T12:00:00Z',
      ['2028-03-12T07:00:00Z', '2028-03-13T06:30:00Z'],
    ],
    [
      'America/New_York 2028: repeat',
      'America/New_York',
      '30 1 * * *',
      '2028-11-04T12:00:00Z',
      ['2028-11-05T05:30:00Z', '2028-11-06T06:30:00Z'],
    ],
    [
      'Australia/Sydney 2027: repeat',
      'Australia/Sydney',
      '30 2 * * *',
      '2027-04-03T00:00:00Z',
      ['2027-04-03T15:30:00Z', '2027-04-04T16:30:00Z'],
    ],
    [
      'Australia/Sydney 2027: gap',
      'Australia/Sydney',
      '30 2 * * *',
      '2027-10-02T00:00:00Z',
      ['2027-10-02T16:00:00Z', '2027-10-03T15:30:00Z'],
    ],
    [
      'Australia/Sydney 2028: repeat',
      'Australia/Sydney',
      '30 2 * * *',
      '2028-04-01T00:00:00Z',
      ['2028-04-01T15:30:00Z', '2028-04-02T16:30:00Z'],
    ],
    [
      'Australia/Sydney 2028: gap',
      'Australia/Sydney',
      '30 2 * * *',
      '2028-09-30T00:00:00Z',
      ['2028-09-30T16:00:00Z', '2028-10-01T15:30:00Z'],
    ],
    // Mexico abolished DST in 2022: the first Sunday of April is an ordinary day since.
    [
      'America/Mexico_City 2026 (rules changed): no gap any more',
      'America/Mexico_City',
      '0 2 * * *',
      '2026-04-04T00:00:00Z',
      ['2026-04-04T08:00:00Z', '2026-04-05T08:00:00Z', '2026-04-06T08:00:00Z'],
    ],
    [
      'America/Mexico_City 2021 (old rules): gap',
      'America/Mexico_City',
      '0 2 * * *',
      '2021-04-03T00:00:00Z',
      ['2021-04-03T08:00:00Z', '2021-04-04T08:00:00Z', '2021-04-05T07:00:00Z'],
    ],
  ] as const)('%s', (_title, zone, cron, after, expected) => {
    it('fires at the expected instants', () => {
      expect(fires(cron, zone, after, expected.length)).toEqual(expected);
    });
  });

  it('offers the other DST policies: skip the gap, the last or both occurrences of a repeat', () => {
    expect(fires('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 2, { gap: 'skip', overlap: 'first' })).toEqual([
      '2026-03-30T00:30:00Z',
      '2026-03-31T00:30:00Z',
    ]);
    expect(fires('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 1, { gap: 'shift', overlap: 'last' })).toEqual([
      '2026-10-25T01:30:00Z',
    ]);
    expect(fires('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2, { gap: 'shift', overlap: 'both' })).toEqual([
      '2026-10-25T00:30:00Z',
      '2026-10-25T01:30:00Z',
    ]);
  });

  it('reads offsets from the zone data Node ships', () => {
    expect(offsetMinutes(Date.parse('2026-07-01T00:00:00Z'), 'Europe/Berlin')).toBe(120);
    expect(offsetMinutes(Date.parse('2026-07-01T00:00:00Z'), 'Asia/Kathmandu')).toBe(345);
    expect(offsetMinutes(Date.parse('2026-01-01T00:00:00Z'), 'Pacific/Chatham')).toBe(825);
  });
});
