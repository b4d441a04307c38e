import { MOST_MONTH_DAYS } from './calendar';

/**
 * Five-field cron (minute hour day-of-month month day-of-week) with lists,
 * ranges, steps, month and weekday names, 7 = Sunday, and the classic rule:
 * when both day fields are restricted, a day matches either. Macros:
 * @hourly @daily @weekly @monthly @yearly (@annually, @midnight).
 */
export interface CronSpec {
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly daysOfWeek: ReadonlySet<number>;
  readonly dayOfMonthRestricted: boolean;
  readonly dayOfWeekRestricted: boolean;
}

export class CronSyntaxError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'CronSyntaxError';
  }
}

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldRule {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
  readonly namesStart?: number;
}

const FIELDS: readonly FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, namesStart: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES, namesStart: 0 },
];

export function parseCron(expression: string): CronSpec {
  const text = expression.trim().toLowerCase();
  const fields = (MACROS[text] ?? text).split(/\s+/);
  if (fields.length !== 5)
    throw new CronSyntaxError(
      'cron',
      `expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`,
    );
  const [minutes, hours, daysOfMonth, months, daysOfWeekRaw] = fields.map((field, i) =>
    parseField(field, FIELDS[i]!),
  ) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  // 7 is Sunday too.
  const daysOfWeek = new Set([...daysOfWeekRaw].map((d) => d % 7));
  return {
    minutes,
    hours,
    daysOfMonth,
    months,
    daysOfWeek,
    dayOfMonthRestricted: fields[2] !== '*',
    dayOfWeekRestricted: fields[4] !== '*',
  };
}

function parseField(field: string, rule: FieldRule): Set<number> {
  const values = new Set<number>();
  for (const part of field.split(',')) {
    const match = /^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d+))?$/.exec(part);
    if (match === null) throw new CronSyntaxError(rule.name, `"${part}" is not a valid ${rule.name} value`);
    const [, startText, endText, stepText] = match;
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) throw new CronSyntaxError(rule.name, `step ${stepText} must be at least 1`);
    const start = startText === '*' ? rule.min : value(startText!, rule);
    const end =
      startText === '*'
        ? rule.max
        : endText !== undefined
          ? value(endText, rule)
          : stepText !== undefined
            ? rule.max
            : start;
    if (end < start) throw new CronSyntaxError(rule.name, `range ${part} runs backwards`);
    for (let v = start; v <= end; v += step) values.add(v);
  }
  return values;
}

function value(text: string, rule: FieldRule): number {
  const named = rule.names?.indexOf(text.slice(0, 3)) ?? -1;
  const n = /^\d+$/.test(text) ? Number(text) : named >= 0 && text.length === 3 ? named + (rule.namesStart ?? 0) : NaN;
  if (!Number.isInteger(n) || n < rule.min || n > rule.max)
    throw new CronSyntaxError(rule.name, `${text} is outside ${rule.min}-${rule.max} for ${rule.name}`);
  return n;
}

/** Does a calendar day match the day fields (the classic OR when both are restricted)? */
export function matchesDay(spec: CronSpec, dayOfMonth: number, month: number, dayOfWeek: number): boolean {
  if (!spec.months.has(month)) return false;
  const dom = spec.daysOfMonth.has(dayOfMonth);
  const dow = spec.daysOfWeek.has(dayOfWeek);
  if (spec.dayOfMonthRestricted && spec.dayOfWeekRestricted) return dom || dow;
  return dom && dow;
}

/**
 * Whether the day fields match any date at all: 0 0 30 2 * and 0 0 31 4,6 * match none. Every month has
 * every weekday, so only a day of the month on its own can miss, when no month of the spec ever has it.
 */
export function matchesSomeDay(spec: CronSpec): boolean {
  if (spec.dayOfWeekRestricted || !spec.dayOfMonthRestricted) return true;
  const firstDay = Math.min(...spec.daysOfMonth);
  return [...spec.months].some((month) => firstDay <= MOST_MONTH_DAYS[month - 1]!);
}
