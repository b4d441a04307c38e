/**
 * Wall-clock time in an IANA zone, from the zone data Node ships (Intl).
 * The DST rules (docs/api.md, "Schedules") live here: a wall time in a
 * spring-forward gap fires once at the first valid instant after the gap; a
 * wall time that repeats at fall-back fires at its first occurrence. Other
 * choices per schedule through DstPolicy.
 */
export interface WallTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
}

export interface DstPolicy {
  /** shift (default): at the end of the gap; skip: not at all. */
  readonly gap: 'shift' | 'skip';
  /** first (default), last, or both occurrences of a repeated wall time. */
  readonly overlap: 'first' | 'last' | 'both';
}

export const DEFAULT_DST_POLICY: DstPolicy = { gap: 'shift', overlap: 'first' };

const MINUTE = 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/**
 * Offsets already computed, per zone and instant. Fire-time arithmetic asks
 * for the same few instants (day boundaries, the hour's fire time) for every
 * job of a zone, and Intl formatting is the materialiser's main cost. Exact:
 * keyed by the instant itself; bounded: a full zone map starts over.
 */
const knownOffsets = new Map<string, Map<number, number>>();
const KNOWN_OFFSETS_PER_ZONE = 20_000;

/** The zone's offset from UTC at an instant, in minutes (Berlin in summer: 120). */
export function offsetMinutes(instantMs: number, zone: string): number {
  let known = knownOffsets.get(zone);
  if (known === undefined) knownOffsets.set(zone, (known = new Map()));
  let offset = known.get(instantMs);
  if (offset === undefined) {
    if (known.size >= KNOWN_OFFSETS_PER_ZONE) known.clear();
    known.set(instantMs, (offset = formattedOffsetMinutes(instantMs, zone)));
  }
  return offset;
}

function formattedOffsetMinutes(instantMs: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(instantMs)))
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const asUtc = Date.UTC(
    parts['year']!,
    parts['month']! - 1,
    parts['day']!,
    parts['hour']!,
    parts['minute']!,
    parts['second']!,
  );
  return Math.round((asUtc - Math.floor(instantMs / 1000) * 1000) / MINUTE);
}

/** The instants at which the zone's clocks show `wall`, under the policy: none, one, or (overlap both) two. */
export function resolveWallTime(wall: WallTime, zone: string, policy: DstPolicy = DEFAULT_DST_POLICY): number[] {
  const wallUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  // The offsets around this wall time: at most two, one each side of a transition.
  const before = offsetMinutes(wallUtc - 36 * 60 * MINUTE, zone);
  const after = offsetMinutes(wallUtc + 36 * 60 * MINUTE, zone);
  const candidates = [...new Set([wallUtc - before * MINUTE, wallUtc - after * MINUTE])].sort((a, b) => a - b);
  const valid = candidates.filter((t) => t + offsetMinutes(t, zone) * MINUTE === wallUtc);
  if (valid.length === 2)
    return policy.overlap === 'both' ? valid : policy.overlap === 'first' ? [valid[0]!] : [valid[1]!];
  if (valid.length === 1) return valid;
  if (policy.gap === 'skip') return [];
  return [transitionWithin(wallUtc - after * MINUTE, wallUtc - before * MINUTE, after, zone)];
}

/** The first instant in [low, high] at which the zone already uses `offsetAfter`: the end of a gap. */
function transitionWithin(low: number, high: number, offsetAfter: number, zone: string): number {
  let lo = Math.min(low, high);
  let hi = Math.max(low, high);
  while (hi - lo > MINUTE) {
    const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
    if (offsetMinutes(mid, zone) === offsetAfter) hi = mid;
    else lo = mid;
  }
  return offsetMinutes(lo, zone) === offsetAfter ? lo : hi;
}

/** The zone's calendar date at an instant. */
export function localDate(instantMs: number, zone: string): { year: number; month: number; day: number } {
  const local = new Date(instantMs + offsetMinutes(instantMs, zone) * MINUTE);
  return { year: local.getUTCFullYear(), month: local.getUTCMonth() + 1, day: local.getUTCDate() };
}
