import fc from 'fast-check';
import { matchesDay, parseCron, type CronSpec } from './cron';
import { nextFireTimes } from './next-fire-times';
import { offsetMinutes } from './zoned-time';

const MINUTE = 60_000;
const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'America/St_Johns',
  'Asia/Kathmandu',
  'UTC',
];
/** Starts a few days before DST transitions of 2026-2028, where the rules bite. */
const NEAR_TRANSITIONS = [
  '2026-03-27',
  '2026-10-23',
  '2026-04-02',
  '2026-10-01',
  '2026-09-24',
  '2027-03-10',
  '2027-11-04',
  '2028-03-24',
  '2028-09-28',
].map((d) => Date.parse(`${d}T00:00:00Z`));

const wallOf = (instant: number, zone: string): Date => new Date(instant + offsetMinutes(instant, zone) * MINUTE);
const wallMatches = (spec: CronSpec, wall: Date): boolean =>
  spec.minutes.has(wall.getUTCMinutes()) &&
  spec.hours.has(wall.getUTCHours()) &&
  matchesDay(spec, wall.getUTCDate(), wall.getUTCMonth() + 1, wall.getUTCDay());
/** A second occurrence of a wall time repeated at fall-back. */
const isRepeat = (instant: number, zone: string): boolean => {
  const earlierOffset = offsetMinutes(instant - 3 * 3_600_000, zone);
  const shift = earlierOffset - offsetMinutes(instant, zone);
  return shift > 0 && wallOf(instant - shift * MINUTE, zone).getTime() === wallOf(instant, zone).getTime();
};
/** The first instant after a spring-forward gap. */
const endsGap = (instant: number, zone: string): boolean =>
  offsetMinutes(instant - MINUTE, zone) < offsetMinutes(instant, zone);

const cronExpression = fc
  .tuple(
    fc.oneof(fc.integer({ min: 0, max: 59 }).map(String), fc.constantFrom('*/15', '*/20', '0,30', '5-10/5')),
    fc.oneof(fc.integer({ min: 0, max: 23 }).map(String), fc.constantFrom('*', '1-3', '2,3', '*/6', '0-23/4')),
    fc.constantFrom('*', '*', '1-28'),
    fc.constant('*'),
    fc.constantFrom('*', '*', '0-6', '1-5', 'sun,sat'),
  )
  .map((fields) => fields.join(' '));

describe('next fire times, for random cron expressions and zones (property)', () => {
  it('are strictly increasing, each a wall-clock match or the end of a gap, and miss no wall-clock match', () => {
    fc.assert(
      fc.property(
        cronExpression,
        fc.constantFrom(...ZONES),
        fc.constantFrom(...NEAR_TRANSITIONS),
        fc.integer({ min: 0, max: 4 * 1440 }),
        (cron, zone, base, offsetMin) => {
          const spec = parseCron(cron);
          const after = base + offsetMin * MINUTE;
          const fires = nextFireTimes(spec, zone, new Date(after), 6).map((d) => d.getTime());
          for (let i = 1; i < fires.length; i++) expect(fires[i]!).toBeGreaterThan(fires[i - 1]!);
          for (const t of fires) {
            const match = wallMatches(spec, wallOf(t, zone)) && !isRepeat(t, zone);
            expect(match || endsGap(t, zone)).toBe(true);
          }
          // Every first occurrence of a matching wall time between `after` and the last fire time is a fire time.
          const fired = new Set(fires);
          const last = fires[fires.length - 1] ?? after;
          for (let m = Math.floor(after / MINUTE) * MINUTE + MINUTE; m <= last; m += MINUTE) {
            if (wallMatches(spec, wallOf(m, zone)) && !isRepeat(m, zone)) expect(fired.has(m)).toBe(true);
          }
        },
      ),
      { numRuns: 60, seed: 20261130 },
    );
  });
});
