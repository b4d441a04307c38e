import type { ComparisonJson, MetricJson } from './compare/report';

/**
 * The bench's charts, drawn as SVG by hand (no dependency): pure functions
 * from a suite's `--json` figures to SVG text. `npm run bench --
 * --charts=DIR` writes them (compare.bench.ts); docs/bench.md embeds them.
 *
 * Horizontal bars, one row per system, the value written at the bar's end:
 * system labels are long, and a row reads like the bench's table. Each panel
 * has its own linear scale from 0, so bar lengths compare within a panel.
 * A white background and no stylesheet or web font: GitHub shows a
 * repository's SVG as an image, in light and dark mode alike.
 */

/** An SVG file to write: `name`.svg. */
export interface ChartFile {
  readonly name: string;
  readonly svg: string;
}

/** A colour with what it stands for, in a legend. */
export interface Series {
  readonly name: string;
  readonly color: string;
}

export interface Bar {
  readonly label: string;
  /** One value for a plain bar, one per series of its panel for a stacked bar; undefined: not measured. */
  readonly values: readonly number[] | undefined;
  /** A plain bar's colour (a stacked bar's segments take their series'). */
  readonly color?: string;
  /** A whisker from min to max (a plain bar's repetitions), drawn when they differ. */
  readonly min?: number;
  readonly max?: number;
  /** Written after the value, in grey: "capped", "1 of 3 failed". */
  readonly note?: string;
}

export interface Panel {
  readonly title?: string;
  /** Under the axis, with the unit: "completions per second". */
  readonly axisLabel: string;
  readonly bars: readonly Bar[];
  /** For stacked bars: what each segment is, in order; the panel's legend. */
  readonly series?: readonly Series[];
}

export interface Chart {
  readonly title: string;
  /** Smaller lines under the title: what was measured, and how. */
  readonly subtitle?: readonly string[];
  /** What the plain bars' colours mean. */
  readonly legend?: readonly Series[];
  readonly panels: readonly Panel[];
}

const WIDTH = 760;
const PAD = 16;
const ROW = 24;
const BAR = 16;
const FONT = 12;
/** About what a character of a 12 px sans-serif takes, rounded up: only for the layout's margins. */
const CHAR_WIDTH = 6.4;
const WRAP_CHAR_WIDTH = 7;
const SWATCH = 12;
const TEXT = '#1f2328';
const MUTED = '#59636e';
const GRID = '#d8dee4';
const FONT_FAMILY = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif";

/** Colours (Okabe and Ito's, told apart with any colour vision) for ours and the peers. */
export const COLORS = {
  ours: '#0072B2',
  peerTuned: '#555555',
  peerDefaults: '#B0B0B0',
  postgres: '#0072B2',
  system: '#E69F00',
  bench: '#009E73',
  rest: '#C8C8C8',
  fullPages: '#CC79A7',
  wal: '#56B4E9',
  heapRows: '#0072B2',
  indexEntries: '#E69F00',
} as const;

/** Text for SVG content and attribute values: the five characters XML reserves, escaped. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]!};`);
}

/** As the bench's table writes a figure: whole numbers with separators, a digit or two under 100. */
export function formatValue(n: number): string {
  if (Number.isInteger(n) || Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(Math.abs(n) < 10 ? 2 : 1);
}

/** The chart as an SVG document. */
export function renderChart(chart: Chart): string {
  const allBars = chart.panels.flatMap((p) => p.bars);
  const labelWidth = Math.max(80, ...allBars.map((b) => textWidth(b.label))) + 12;
  const valueWidth = Math.max(40, ...allBars.map((b) => textWidth(valueText(b)))) + 12;
  const x0 = PAD + labelWidth;
  const plotWidth = WIDTH - x0 - PAD - valueWidth;
  const body: string[] = [];
  let y = PAD;

  body.push(text(PAD, y + 16, chart.title, { size: 16, weight: 'bold' }));
  y += 26;
  for (const line of (chart.subtitle ?? []).flatMap((l) => wrap(l, WIDTH - 2 * PAD))) {
    body.push(text(PAD, y + 11, line, { fill: MUTED }));
    y += 16;
  }
  if (chart.legend !== undefined && chart.legend.length > 0) {
    y += 4;
    y = legend(body, chart.legend, y);
  }
  for (const panel of chart.panels) {
    y += 10;
    if (panel.title !== undefined) {
      body.push(text(PAD, y + 13, panel.title, { size: 13, weight: 'bold' }));
      y += 20;
    }
    if (panel.series !== undefined && panel.series.length > 1) y = legend(body, panel.series, y);
    y = drawPanel(body, panel, { x0, plotWidth, y });
  }
  const height = Math.ceil(y + PAD);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" ` +
    `role="img" aria-label="${escapeXml(chart.title)}" font-family="${escapeXml(FONT_FAMILY)}" font-size="${FONT}">\n` +
    `<title>${escapeXml(chart.title)}</title>\n` +
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>\n` +
    body.join('\n') +
    '\n</svg>\n'
  );
}

/** The panel's grid, bars and axis from `y` down; returns where the next thing goes. */
function drawPanel(body: string[], panel: Panel, at: { x0: number; plotWidth: number; y: number }): number {
  const { x0, plotWidth } = at;
  const top = at.y + 4;
  const extents = panel.bars.map(extent);
  const { max: axisMax, step } = niceAxis(axisLimit(extents));
  const scale = (v: number): number => round((v / axisMax) * plotWidth);
  const bottom = top + panel.bars.length * ROW;

  const ticks = Array.from({ length: Math.round(axisMax / step) + 1 }, (_, i) => i * step);
  body.push('<g class="grid">');
  for (const tick of ticks) {
    const x = x0 + scale(tick);
    body.push(
      `<line x1="${x}" y1="${top}" x2="${x}" y2="${bottom}" stroke="${tick === 0 ? MUTED : GRID}" stroke-width="1"/>`,
    );
    body.push(text(x, bottom + 14, formatTick(tick), { anchor: 'middle', fill: MUTED, size: 11 }));
  }
  body.push('</g>');

  for (const [i, bar] of panel.bars.entries()) {
    const y = top + i * ROW + (ROW - BAR) / 2;
    const middle = y + BAR / 2;
    const sum = total(bar);
    const offScale = sum !== undefined && sum > axisMax;
    body.push(
      `<g class="bar" data-label="${escapeXml(bar.label)}" data-value="${sum ?? ''}"` +
        `${offScale ? ' data-cut="true"' : ''}>`,
    );
    body.push(text(x0 - 8, middle + 4, bar.label, { anchor: 'end', cls: 'label' }));
    // A bar cut short keeps its segments' shares, over the axis's length and a little more.
    const width = (value: number): number =>
      offScale ? round((value / sum!) * (plotWidth + CUT_OVERHANG)) : scale(value);
    // Values inside the segments only where there are two or more: one would repeat the total.
    const stacked = (bar.values ?? []).filter((v) => v > 0).length > 1;
    let end = x0;
    for (const [k, value] of (bar.values ?? []).entries()) {
      const w = width(value);
      const series = panel.series?.[k];
      const color = series?.color ?? bar.color ?? COLORS.ours;
      const name = series === undefined ? '' : `${series.name}: `;
      body.push(
        `<rect class="segment" x="${round(end)}" y="${y}" width="${w}" height="${BAR}" fill="${color}" ` +
          `data-value="${value}"${series === undefined ? '' : ` data-series="${escapeXml(series.name)}"`}>` +
          `<title>${escapeXml(`${bar.label}: ${name}${formatValue(value)}`)}</title></rect>`,
      );
      // A stacked segment wide enough shows its own value inside, unless a cut's slashes cross it.
      const inside = formatValue(value);
      const crossesCut = offScale && end + w > x0 + plotWidth - 24;
      if (stacked && !crossesCut && w >= textWidth(inside, 11) + 6)
        body.push(
          text(round(end + w / 2), middle + 4, inside, {
            anchor: 'middle',
            size: 11,
            fill: darkText(color) ? TEXT : '#ffffff',
            cls: 'segment-value',
          }),
        );
      end += w;
    }
    if (offScale) {
      // Two white slashes across the bar where the axis ends: the bar is longer than drawn.
      const x = x0 + plotWidth - 4;
      body.push(
        `<path class="cut" d="M${x - 3} ${y + BAR + 2}L${x + 3} ${y - 2}M${x + 3} ${y + BAR + 2}L${x + 9} ${y - 2}" ` +
          `stroke="#ffffff" stroke-width="2.5"/>`,
      );
    }
    if (!offScale && bar.min !== undefined && bar.max !== undefined && bar.max > bar.min) {
      // A whisker beyond the axis stops at its end, without the cap that marks the highest repetition.
      const [from, to] = [x0 + scale(bar.min), x0 + scale(Math.min(bar.max, axisMax))];
      const cap = bar.max > axisMax ? '' : `M${to} ${middle - 5}V${middle + 5}`;
      body.push(
        `<path class="whisker" d="M${from} ${middle}H${to}M${from} ${middle - 5}V${middle + 5}${cap}" ` +
          `stroke="${TEXT}" stroke-width="1.2" fill="none"/>`,
      );
      end = Math.max(end, to);
    }
    body.push(valueLabel(end + 5, middle + 4, bar));
    body.push('</g>');
  }
  body.push(text(x0 + plotWidth / 2, bottom + 32, panel.axisLabel, { anchor: 'middle', cls: 'axis-label' }));
  if (!panel.bars.some((b) => (total(b) ?? 0) > axisMax)) return bottom + 40;
  body.push(
    text(x0 + plotWidth / 2, bottom + 48, CUT_NOTE, { anchor: 'middle', fill: MUTED, size: 11, cls: 'cut-note' }),
  );
  return bottom + 56;
}

/** How far past the axis's end a bar cut short reaches. */
const CUT_OVERHANG = 14;
const CUT_NOTE = 'A bar with two white slashes is cut short: its value, written beside it, is beyond the axis.';

/** How far a bar reaches on its axis: its value, or its whisker's end. */
function extent(bar: Bar): number {
  return Math.max(0, total(bar) ?? 0, bar.max ?? 0);
}

/**
 * What the axis must reach: the longest bar, unless it is more than CUT_RATIO times the next (a
 * peer at its defaults that drained 20 runs in the cap has spent a thousand times our CPU a run):
 * then the next, and that bar is drawn cut short with its value written. At most a third of the
 * bars are cut, so the scale still shows most of them.
 */
export function axisLimit(extents: readonly number[]): number {
  const sorted = [...extents].sort((a, b) => b - a);
  let cut = 0;
  while (cut < Math.floor(sorted.length / 3) && sorted[cut]! > CUT_RATIO * sorted[cut + 1]! && sorted[cut + 1]! > 0)
    cut++;
  return sorted[cut] ?? 0;
}

const CUT_RATIO = 3;

/** The legend's swatches in columns as wide as its longest name; returns the y below it. */
function legend(body: string[], series: readonly Series[], top: number): number {
  const column = Math.max(...series.map((s) => SWATCH + 6 + textWidth(s.name) + 24));
  const columns = Math.max(1, Math.floor((WIDTH - 2 * PAD) / column));
  body.push('<g class="legend">');
  for (const [i, s] of series.entries()) {
    const [x, y] = [PAD + (i % columns) * column, top + Math.floor(i / columns) * 18];
    body.push(`<rect x="${round(x)}" y="${y + 2}" width="${SWATCH}" height="${SWATCH}" fill="${s.color}"/>`);
    body.push(text(x + SWATCH + 6, y + 12, s.name));
  }
  body.push('</g>');
  return top + Math.ceil(series.length / columns) * 18 + 4;
}

function valueLabel(x: number, y: number, bar: Bar): string {
  const sum = total(bar);
  const value = sum === undefined ? 'n/a' : formatValue(sum);
  const note = bar.note === undefined ? '' : ` <tspan fill="${MUTED}">(${escapeXml(bar.note)})</tspan>`;
  return `<text class="value" x="${round(x)}" y="${y}" fill="${TEXT}">${escapeXml(value)}${note}</text>`;
}

function valueText(bar: Bar): string {
  const sum = total(bar);
  return `${sum === undefined ? 'n/a' : formatValue(sum)}${bar.note === undefined ? '' : ` (${bar.note})`}`;
}

function total(bar: Bar): number | undefined {
  return bar.values === undefined ? undefined : bar.values.reduce((a, b) => a + b, 0);
}

function text(
  x: number,
  y: number,
  content: string,
  style: { size?: number; weight?: string; fill?: string; anchor?: string; cls?: string } = {},
): string {
  const attributes = [
    style.cls === undefined ? '' : ` class="${style.cls}"`,
    ` x="${round(x)}" y="${round(y)}"`,
    style.size === undefined ? '' : ` font-size="${style.size}"`,
    style.weight === undefined ? '' : ` font-weight="${style.weight}"`,
    style.anchor === undefined ? '' : ` text-anchor="${style.anchor}"`,
    ` fill="${style.fill ?? TEXT}"`,
  ].join('');
  return `<text${attributes}>${escapeXml(content)}</text>`;
}

/** An axis from 0 to a round number at or above `highest`, in 4 to 10 steps of 1, 2 or 5 times a power of ten. */
export function niceAxis(highest: number): { max: number; step: number } {
  if (!(highest > 0)) return { max: 1, step: 0.2 };
  const raw = highest / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
  return { max: Math.ceil(highest / step - 1e-9) * step, step };
}

function formatTick(n: number): string {
  return Number(n.toPrecision(6)).toLocaleString('en-US');
}

function textWidth(s: string, size = FONT): number {
  return s.length * CHAR_WIDTH * (size / FONT);
}

/**
 * Lines of at most `width`, broken between words; estimated with wider characters than the layout's
 * (a viewer without Helvetica or Arial may draw wider ones), as a line too long is cut off.
 */
function wrap(line: string, width: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of line.split(' ')) {
    const next = current === '' ? word : `${current} ${word}`;
    if (current !== '' && next.length * WRAP_CHAR_WIDTH > width) {
      lines.push(current);
      current = word;
    } else current = next;
  }
  return current === '' ? lines : [...lines, current];
}

/** Dark text reads better on this fill than white (WCAG's relative luminance above about 0.18). */
function darkText(hex: string): boolean {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b! > 0.18;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

// ---------------------------------------------------------------------------------------------------
// The peer comparison's charts.

type Result = ComparisonJson['results'][number];

/** What the charts need of `--json`'s peer comparison (a saved file does too). */
export type ComparisonResults = Pick<ComparisonJson, 'server' | 'sizes' | 'results'>;

const THROUGHPUTS = [
  {
    scenario: 'bulk',
    metric: 'runsPerSecond',
    title: 'Bulk enqueue: runs per second',
    axis: 'runs enqueued per second (higher is better)',
    what: (s: ComparisonResults['sizes']) =>
      `${formatValue(s.bulkRuns)} runs due now, sent 1,000 per batch call, one call at a time, no workers running.`,
  },
  {
    scenario: 'drain',
    metric: 'completionsPerSecond',
    title: 'Drain: completions per second',
    axis: 'runs completed per second (higher is better)',
    what: (s: ComparisonResults['sizes']) =>
      `${formatValue(s.drainRuns)} ready runs, then the workers start; timed until the system's tables hold none ` +
      `(capped at ${s.drainCapSeconds} s).`,
  },
  {
    scenario: 'sustained',
    metric: 'completionsPerSecond',
    title: 'Sustained lifecycle: handler starts per second',
    axis: 'handler starts per second (higher is better)',
    what: (s: ComparisonResults['sizes']) =>
      `${s.sustainedSeconds} s of one producer sending batches of 100 (pausing while 1,000 wait), workers running.`,
  },
] as const;

/**
 * The peer comparison's charts, for the scenarios the figures hold: a throughput chart per
 * scenario with one, the p99 latencies, and the drain's cost per run (CPU by process; WAL, heap
 * rows and index entries). `caption`: a line saying which run they come from (date, machine).
 */
export function comparisonCharts(json: ComparisonResults, caption?: string): ChartFile[] {
  const files: ChartFile[] = [];
  const how = `${medianOf(json.sizes.repetitions)}. Server: ${json.server}.`;
  const subtitle = (what: string): string[] => [what, how, ...(caption === undefined ? [] : [caption])];
  for (const t of THROUGHPUTS) {
    const results = json.results.filter((r) => r.scenario === t.scenario);
    if (results.length === 0) continue;
    const bars = results.map((r) => plainBar(r, t.metric));
    files.push({
      name: `${t.scenario}-throughput`,
      svg: renderChart({
        title: t.title,
        subtitle: subtitle(t.what(json.sizes)),
        legend: legendOf(bars),
        panels: [{ axisLabel: t.axis, bars }],
      }),
    });
  }
  const latencies = latencyPanels(json);
  if (latencies.length > 0) {
    const bars = latencies.flatMap((p) => p.bars);
    files.push({
      name: 'latency-p99',
      svg: renderChart({
        title: 'Latency: 99th percentiles',
        subtitle: subtitle(
          'Sustained: from the time a batch was sent to its handler starting. Timeliness: ' +
            `${formatValue(json.sizes.timelinessRuns)} runs due at one instant ${json.sizes.timelinessLeadSeconds} s ahead, ` +
            'idle workers; how late after it each handler starts (a run not started after 10 s counts as 10 s).',
        ),
        legend: legendOf(bars),
        panels: latencies,
      }),
    });
  }
  const drain = json.results.filter((r) => r.scenario === 'drain');
  if (drain.some((r) => median(r, 'cpuMicrosecondsPerRun') !== undefined))
    files.push({ name: 'drain-cpu-per-run', svg: renderChart(cpuChart(drain, subtitle)) });
  if (drain.some((r) => median(r, 'walBytesPerRun') !== undefined))
    files.push({ name: 'drain-writes-per-run', svg: renderChart(writesChart(drain, subtitle)) });
  return files;
}

function latencyPanels(json: ComparisonResults): Panel[] {
  const panels: Panel[] = [];
  const sustained = json.results.filter((r) => r.scenario === 'sustained');
  if (sustained.length > 0)
    panels.push({
      title: 'Sustained: start delay p99',
      axisLabel: 'milliseconds from the batch sent to the handler started (lower is better)',
      bars: sustained.map((r) => plainBar(r, 'p99Ms')),
    });
  const timeliness = json.results.filter((r) => r.scenario === 'timeliness');
  if (timeliness.length > 0)
    panels.push({
      title: 'Timeliness: lateness p99',
      axisLabel: 'milliseconds after the due instant (lower is better)',
      bars: timeliness.map((r) => plainBar(r, 'p99Ms')),
    });
  return panels;
}

function cpuChart(drain: readonly Result[], subtitle: (what: string) => string[]): Chart {
  const series: Series[] = [
    { name: 'PostgreSQL', color: COLORS.postgres },
    { name: "the system's own processes (our server)", color: COLORS.system },
    { name: "the bench process (workers; the peers' clients)", color: COLORS.bench },
    { name: 'the rest of the machine', color: COLORS.rest },
  ];
  const bars = drain.map((r): Bar => {
    const machine = median(r, 'cpuMicrosecondsPerRun');
    if (machine === undefined) return { label: r.system, values: undefined, ...noteOf(r) };
    const parts = [
      median(r, 'cpuPostgresMicrosecondsPerRun') ?? 0,
      median(r, 'cpuSystemMicrosecondsPerRun') ?? 0,
      median(r, 'cpuBenchMicrosecondsPerRun') ?? 0,
    ];
    const rest = Math.max(0, machine - parts.reduce((a, b) => a + b, 0));
    return { label: r.system, values: [...parts, rest], ...noteOf(r) };
  });
  return {
    title: 'Drain: CPU time per completed run, by process',
    subtitle: subtitle(
      "The machine's busy CPU time in the drain's window over the runs completed, split by process " +
        "(/proc); the rest is the machine's time less the parts: the kernel's, and anything else running.",
    ),
    panels: [{ axisLabel: 'CPU microseconds per completed run (lower is better)', bars, series }],
  };
}

function writesChart(drain: readonly Result[], subtitle: (what: string) => string[]): Chart {
  const withPages = drain.some((r) => median(r, 'walFullPageBytesPerRun') !== undefined);
  const walBars = drain.map((r): Bar => {
    const wal = median(r, 'walBytesPerRun');
    if (wal === undefined) return { label: r.system, values: undefined, ...noteOf(r) };
    const pages = Math.min(wal, median(r, 'walFullPageBytesPerRun') ?? 0);
    return { label: r.system, values: withPages ? [pages, wal - pages] : [wal], ...noteOf(r) };
  });
  const rowBars = drain.map((r): Bar => {
    const [rows, entries] = [median(r, 'heapRowsPerRun'), median(r, 'indexEntriesPerRun')];
    return rows === undefined || entries === undefined
      ? { label: r.system, values: undefined, ...noteOf(r) }
      : { label: r.system, values: [rows, entries], ...noteOf(r) };
  });
  const panels: Panel[] = [
    {
      title: 'WAL bytes per run',
      axisLabel: 'bytes of WAL per completed run (lower is better)',
      bars: walBars,
      series: withPages
        ? [
            { name: 'full-page images (a checkpoint in the window)', color: COLORS.fullPages },
            { name: 'the rest of the WAL', color: COLORS.wal },
          ]
        : [{ name: 'WAL', color: COLORS.wal }],
    },
  ];
  if (rowBars.some((b) => b.values !== undefined))
    panels.push({
      title: 'Heap rows and index entries written per run',
      axisLabel: 'records per completed run, read back from the WAL (lower is better)',
      bars: rowBars,
      series: [
        { name: 'heap rows (insert, update, delete)', color: COLORS.heapRows },
        { name: 'B-tree index entries', color: COLORS.indexEntries },
      ],
    });
  return {
    title: 'Drain: what PostgreSQL writes per completed run',
    subtitle: subtitle(
      "WAL written in the drain's window (pg_current_wal_insert_lsn at its edges) over the runs completed; " +
        'heap rows and index entries counted from its WAL records (pg_walinspect).',
    ),
    panels,
  };
}

function plainBar(r: Result, metric: string): Bar {
  const m: MetricJson | undefined = r.metrics[metric];
  const runs = m?.runs ?? 0;
  return {
    label: r.system,
    values: m?.median === undefined ? undefined : [m.median],
    color: colorOf(r.system),
    ...(runs > 1 && m?.min !== undefined && m.max !== undefined ? { min: m.min, max: m.max } : {}),
    ...noteOf(r),
  };
}

function median(r: Result, metric: string): number | undefined {
  return r.metrics[metric]?.median;
}

/** What the table's note column says, short: a capped drain, runs not started in time, failed repetitions. */
function noteOf(r: Result): { note?: string } {
  const failed = r.runs.filter((m) => m.failed === true).length;
  const notes = r.runs.filter((m) => m.failed !== true).map((m) => m.note ?? '');
  const parts = [
    ...(notes.some((n) => n.includes('capped at')) ? ['capped'] : []),
    ...(notes.some((n) => n.includes('not started')) ? ['some not started: counted as 10 s'] : []),
    ...(failed > 0 ? [`${failed} of ${r.runs.length} failed`] : []),
  ];
  return parts.length === 0 ? {} : { note: parts.join(', ') };
}

function colorOf(label: string): string {
  if (label.startsWith('chronicle')) return COLORS.ours;
  return label.includes('defaults') ? COLORS.peerDefaults : COLORS.peerTuned;
}

function legendOf(bars: readonly Bar[]): Series[] {
  const legend: Series[] = [
    { name: 'ours (chronicle)', color: COLORS.ours },
    { name: 'a peer, tuned', color: COLORS.peerTuned },
    { name: 'a peer at its defaults', color: COLORS.peerDefaults },
  ];
  return legend.filter((s) => bars.some((b) => b.color === s.color));
}

function medianOf(repetitions: number): string {
  return repetitions === 1
    ? 'One repetition per system'
    : `Median of ${repetitions} repetitions per system, whiskers from the lowest to the highest`;
}
