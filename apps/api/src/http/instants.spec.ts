import { isInstant, optionalInstant } from './instants';

describe('isInstant: the strict ISO 8601 rule every instant the API takes follows', () => {
  it.each([
    '2026-03-15T01:00:00Z',
    '2026-03-15T01:00:00.123Z',
    '2026-03-15T01:00:00.123-05:00',
    '2026-03-15T01:00+0530',
    '2026-03-15T01:00:00',
    '2026-03-15T24:00',
    '2026-03-15',
    '2024-02-29',
    '2026',
  ])('takes %s', (value) => expect(isInstant(value)).toBe(true));

  it.each([
    '2026-W05-3', // a week date
    '2024-366', // an ordinal date
    '2026-03-15T', // a T and no time
    '20260315T010203Z',
    '2026-03-15T01:00:00,5+01:00',
    '+2026-03-15T01:02:03.456-05:00',
  ])('refuses %s, strict ISO 8601 that no Date reads (an Invalid Date, then a 500)', (value) =>
    expect(isInstant(value)).toBe(false),
  );

  it.each([
    '2026-03-15 01:00:00Z', // a space between date and time
    '2026-03-15t01:00:00z',
    '2026-02-29', // not a leap year
    '2026-02-30',
    '2026-04-31',
    '2026-366',
    '2026-13-01',
    '2026-03-15T25:00:00Z',
    '2026-03-15T01:60:00Z',
    '2026-03-15T01:00:00+24:00',
    '202603', // year and month without a separator
    'yesterday',
    '',
  ])('refuses %j', (value) => expect(isInstant(value)).toBe(false));

  it('refuses what is not a string', () => {
    for (const value of [undefined, null, 20260315, ['2026-03-15'], new Date()]) expect(isInstant(value)).toBe(false);
  });

  it("reads a query parameter's instant, or refuses it naming the parameter", () => {
    expect(optionalInstant(undefined, 'asOf')).toBeUndefined();
    expect(optionalInstant('2026-03-15T01:00:00Z', 'asOf')).toEqual(new Date('2026-03-15T01:00:00Z'));
    expect(() => optionalInstant('last-tuesday', 'asOf')).toThrow('asOf must be an ISO 8601 instant');
  });
});
