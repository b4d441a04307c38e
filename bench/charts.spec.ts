import { axisLimit, comparisonCharts, niceAxis, renderChart, type ComparisonResults } from './charts';
import type { MetricJson } from './compare/report';
import { FULL } from './compare/scenario';

/** An element of a parsed XML document: its name, attributes (entities decoded), children and text. */
interface Element {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: Element[];
  /** Its own text and its descendants', in document order. */
  text: string;
}

const ENTITY = /&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/g;

/** Reserved characters must come escaped: a lone `&` or `<` in text or an attribute is not well-formed. */
function decode(raw: string, where: string): string {
  if (/[<]/.test(raw) || /&/.test(raw.replace(ENTITY, ''))) throw new Error(`unescaped character in ${where}: ${raw}`);
  return raw.replace(ENTITY, (e) =>
    e.startsWith('&#x')
      ? String.fromCodePoint(parseInt(e.slice(3, -1), 16))
      : e.startsWith('&#')
        ? String.fromCodePoint(Number(e.slice(2, -1)))
        : { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'" }[e]!,
  );
}

/**
 * A small XML parser, strict where an SVG written by hand can go wrong: tags must balance and nest,
 * attributes must be quoted and not repeated, `&` and `<` must be escaped, one root element and
 * nothing but whitespace around it. Throws on the first fault.
 */
function parseXml(xml: string): Element {
  const token = /<\/([\w:-]+)\s*>|<([\w:-]+)((?:\s+[\w:-]+\s*=\s*"[^"]*")*)\s*(\/?)>|([^<]+)|(<)/y;
  const root: Element = { name: '#document', attributes: {}, children: [], text: '' };
  const open: Element[] = [root];
  while (token.lastIndex < xml.length) {
    const at = token.lastIndex;
    const m = token.exec(xml)!;
    const [, close, name, rawAttributes, selfClosing, text, stray] = m;
    const parent = open[open.length - 1]!;
    if (stray !== undefined) throw new Error(`a "<" that starts no tag at ${at}: ${xml.slice(at, at + 40)}`);
    if (text !== undefined) {
      const decoded = decode(text, `text at ${at}`);
      if (parent === root && decoded.trim() !== '') throw new Error(`text outside the root element at ${at}`);
      for (const element of open) element.text += decoded;
    } else if (close !== undefined) {
      if (parent.name !== close) throw new Error(`</${close}> at ${at} closes <${parent.name}>`);
      open.pop();
    } else {
      if (parent === root && root.children.length > 0) throw new Error(`a second root element <${name}> at ${at}`);
      const attributes: Record<string, string> = {};
      for (const [, key, value] of rawAttributes!.matchAll(/([\w:-]+)\s*=\s*"([^"]*)"/g)) {
        if (key! in attributes) throw new Error(`attribute ${key} twice on <${name}> at ${at}`);
        attributes[key!] = decode(value!, `attribute ${key} of <${name}>`);
      }
      const element: Element = { name: name!, attributes, children: [], text: '' };
      parent.children.push(element);
      if (selfClosing !== '/') open.push(element);
    }
  }
  if (open.length > 1) throw new Error(`<${open[open.length - 1]!.name}> is never closed`);
  if (root.children.length !== 1) throw new Error('no root element');
  return root.children[0]!;
}

function all(element: Element, match: (e: Element) => boolean): Element[] {
  return [...(match(element) ? [element] : []), ...element.children.flatMap((c) => all(c, match))];
}

const byClass = (element: Element, cls: string): Element[] => all(element, (e) => e.attributes['class'] === cls);
const one = (element: Element, cls: string): Element => {
  const found = byClass(element, cls);
  if (found.length !== 1) throw new Error(`${found.length} elements of class ${cls}, not 1`);
  return found[0]!;
};
const widthOf = (e: Element): number => Number(e.attributes['width']);
const xOf = (e: Element): number => Number(e.attributes['x']);

function metric(median: number, spread: { min?: number; max?: number; runs?: number } = {}): MetricJson {
  return {
    unit: '',
    higherIsBetter: true,
    median,
    min: spread.min ?? median,
    max: spread.max ?? median,
    runs: spread.runs ?? 1,
  };
}

type Result = ComparisonResults['results'][number];
function result(scenario: string, system: string, metrics: Record<string, MetricJson>, note?: string): Result {
  return { scenario, system, metrics, runs: [{ values: {}, ...(note === undefined ? {} : { note }) }] };
}

const SYSTEMS = ['chronicle', 'chronicle split', 'graphile-worker tuned', 'pg-boss tuned', 'pg-boss defaults'];
const DRAIN = [4_403, 4_120, 28_095, 19_058, 1_900];

/** A peer comparison's --json with every scenario, figures like a full run's. */
function comparison(): ComparisonResults {
  const cpu = (machine: number, postgres: number, system: number | undefined, bench: number) => ({
    cpuMicrosecondsPerRun: metric(machine),
    cpuPostgresMicrosecondsPerRun: metric(postgres),
    ...(system === undefined ? {} : { cpuSystemMicrosecondsPerRun: metric(system) }),
    cpuBenchMicrosecondsPerRun: metric(bench),
  });
  const costs = [
    cpu(357, 190, 110, 40),
    cpu(380, 200, 120, 45),
    cpu(44, 25, undefined, 15),
    cpu(88, 50, undefined, 30),
    cpu(95, 60, undefined, 30),
  ];
  const wal = [3_732, 3_740, 518, 1_290, 1_300];
  return {
    server: 'embedded PostgreSQL 18.4',
    sizes: FULL,
    results: [
      ...SYSTEMS.map((s, i) =>
        result('bulk', s, { runsPerSecond: metric([6_718, 6_000, 49_190, 35_324, 34_000][i]!) }),
      ),
      ...SYSTEMS.map((s, i) =>
        result(
          'drain',
          s,
          {
            completionsPerSecond: metric(DRAIN[i]!, { min: DRAIN[i]! * 0.9, max: DRAIN[i]! * 1.1, runs: 3 }),
            walBytesPerRun: metric(wal[i]!),
            walFullPageBytesPerRun: metric(i === 0 ? 300 : 0),
            heapRowsPerRun: metric([9.5, 9.5, 2, 3, 3][i]!),
            indexEntriesPerRun: metric([24, 24, 3, 6.5, 6.5][i]!),
            ...costs[i]!,
          },
          i === 4 ? 'capped at 30 s with 7 of 20000 left' : undefined,
        ),
      ),
      ...SYSTEMS.map((s, i) =>
        result('sustained', s, {
          completionsPerSecond: metric([2_716, 2_500, 15_203, 8_332, 500][i]!),
          p99Ms: metric([129, 150, 75, 51, 300][i]!),
        }),
      ),
      result('timeliness', 'chronicle prefetch (opt-in)', { p99Ms: metric(5) }),
      ...SYSTEMS.map((s, i) => result('timeliness', s, { p99Ms: metric([624, 700, 154, 102, 400][i]!) })),
    ],
  };
}

function chart(name: string, json = comparison()): Element {
  const file = comparisonCharts(json, 'A test.').find((f) => f.name === name);
  if (file === undefined) throw new Error(`no chart ${name}`);
  return parseXml(file.svg);
}

describe('the bench charts', () => {
  it('are well-formed SVG documents, each with a title, axis labels with units and a legend', () => {
    const files = comparisonCharts(comparison(), 'A --quick run on 2026-12-07, 2 cores.');

    expect(files.map((f) => f.name)).toEqual([
      'bulk-throughput',
      'drain-throughput',
      'sustained-throughput',
      'latency-p99',
      'drain-cpu-per-run',
      'drain-writes-per-run',
    ]);
    for (const file of files) {
      const svg = parseXml(file.svg);
      expect(svg.name).toBe('svg');
      expect(svg.attributes['xmlns']).toBe('http://www.w3.org/2000/svg');
      expect(svg.attributes['viewBox']).toMatch(/^0 0 760 \d+$/);
      expect(svg.children.find((c) => c.name === 'title')?.text).toBeTruthy();
      expect(byClass(svg, 'axis-label').every((a) => /per|milliseconds/.test(a.text))).toBe(true);
      expect(byClass(svg, 'legend').length).toBeGreaterThan(0);
      expect(svg.text).toContain('A --quick run on 2026-12-07, 2 cores.');
    }
  });

  it('draw one bar per system, with its label and its value written on it', () => {
    const bars = byClass(chart('drain-throughput'), 'bar');

    expect(bars.map((b) => one(b, 'label').text)).toEqual(SYSTEMS);
    expect(bars.map((b) => one(b, 'value').text)).toEqual(['4,403', '4,120', '28,095', '19,058', '1,900 (capped)']);
    expect(bars.map((b) => byClass(b, 'segment').length)).toEqual([1, 1, 1, 1, 1]);
  });

  it('scale bars in proportion to their values, from one origin, within the plot', () => {
    const svg = chart('drain-throughput');
    const segments = byClass(svg, 'bar').map((b) => one(b, 'segment'));
    const widths = segments.map(widthOf);

    // Widths are rounded to a tenth of a pixel.
    for (const [i, width] of widths.entries()) expect(width / widths[0]!).toBeCloseTo(DRAIN[i]! / DRAIN[0]!, 2);
    expect(new Set(segments.map(xOf)).size).toBe(1);
    // The axis ends at the round number after the longest whisker's end (28,095 x 1.1 on an axis to 40,000).
    const gridLines = all(one(svg, 'grid'), (e) => e.name === 'line').map((l) => Number(l.attributes['x1']));
    const plotWidth = Math.max(...gridLines) - Math.min(...gridLines);
    expect(Math.max(...widths) / plotWidth).toBeCloseTo(28_095 / 40_000, 2);
  });

  it('draw whiskers from the lowest to the highest repetition when there were several', () => {
    const drain = byClass(chart('drain-throughput'), 'bar');
    const bulk = byClass(chart('bulk-throughput'), 'bar');

    expect(drain.map((b) => byClass(b, 'whisker').length)).toEqual([1, 1, 1, 1, 1]);
    expect(bulk.map((b) => byClass(b, 'whisker').length)).toEqual([0, 0, 0, 0, 0]);
    // From 0.9x to 1.1x of ours, on the scale of the bar's 1x.
    const ours = drain[0]!;
    const [from, to] = one(ours, 'whisker')
      .attributes['d']!.match(/^M([\d.]+) [\d.]+H([\d.]+)/)!
      .slice(1)
      .map(Number);
    const segment = one(ours, 'segment');
    expect((to! - xOf(segment)) / widthOf(segment)).toBeCloseTo(1.1, 2);
    expect((from! - xOf(segment)) / widthOf(segment)).toBeCloseTo(0.9, 2);
  });

  it("stack the drain's CPU per run by process, the rest of the machine's time last", () => {
    const bars = byClass(chart('drain-cpu-per-run'), 'bar');
    const ours = byClass(bars[0]!, 'segment');

    expect(bars.map((b) => one(b, 'label').text)).toEqual(SYSTEMS);
    expect(ours.map((s) => [s.attributes['data-series'], Number(s.attributes['data-value'])])).toEqual([
      ['PostgreSQL', 190],
      ["the system's own processes (our server)", 110],
      ["the bench process (workers; the peers' clients)", 40],
      ['the rest of the machine', 17],
    ]);
    expect(one(bars[0]!, 'value').text).toBe('357');
    // A peer has no processes of its own: a segment of 0.
    expect(byClass(bars[2]!, 'segment').map((s) => Number(s.attributes['data-value']))).toEqual([25, 0, 15, 4]);
    // Each segment starts where the one before it ends, and all are on one scale.
    for (const bar of bars) {
      const segments = byClass(bar, 'segment');
      for (let k = 1; k < segments.length; k++)
        expect(xOf(segments[k]!)).toBeCloseTo(xOf(segments[k - 1]!) + widthOf(segments[k - 1]!), 0);
    }
    const pixelsPerMicrosecond = widthOf(ours[0]!) / 190;
    expect(widthOf(byClass(bars[3]!, 'segment')[0]!) / pixelsPerMicrosecond).toBeCloseTo(50, 0);
  });

  it("stack the drain's WAL per run (full-page images apart) and its heap rows and index entries", () => {
    const svg = chart('drain-writes-per-run');
    const bars = byClass(svg, 'bar');
    const [wal, rows] = [bars.slice(0, SYSTEMS.length), bars.slice(SYSTEMS.length)];

    expect(wal.map((b) => one(b, 'value').text)).toEqual(['3,732', '3,740', '518', '1,290', '1,300 (capped)']);
    expect(byClass(wal[0]!, 'segment').map((s) => Number(s.attributes['data-value']))).toEqual([300, 3_432]);
    // Each segment's value inside it; not where one segment is the whole bar (its total is beside it).
    expect(byClass(wal[0]!, 'segment-value').map((t) => t.text)).toEqual(['300', '3,432']);
    expect(byClass(wal[2]!, 'segment-value')).toEqual([]);
    expect(rows.map((b) => one(b, 'value').text)).toEqual(['33.5', '33.5', '5', '9.50', '9.50 (capped)']);
    expect(byClass(rows[0]!, 'segment').map((s) => s.attributes['data-series'])).toEqual([
      'heap rows (insert, update, delete)',
      'B-tree index entries',
    ]);
  });

  it('put both latencies in one chart, each panel on its own scale', () => {
    const svg = chart('latency-p99');
    const bars = byClass(svg, 'bar');

    expect(bars.map((b) => one(b, 'label').text)).toEqual([...SYSTEMS, 'chronicle prefetch (opt-in)', ...SYSTEMS]);
    expect(bars.map((b) => one(b, 'value').text)).toEqual([
      '129',
      '150',
      '75',
      '51',
      '300',
      '5',
      '624',
      '700',
      '154',
      '102',
      '400',
    ]);
    expect(byClass(svg, 'axis-label').map((a) => a.text)).toEqual([
      'milliseconds from the batch sent to the handler started (lower is better)',
      'milliseconds after the due instant (lower is better)',
    ]);
  });

  it('escape labels, notes and titles', () => {
    const label = `<script>alert("x")</script> & 'more'`;
    const svg = renderChart({
      title: 'A & B <c>',
      subtitle: ['"quoted" & <tagged>'],
      panels: [{ axisLabel: 'runs/s <higher>', bars: [{ label, values: [10], note: 'a < b & c' }] }],
    });

    expect(svg).not.toContain('<script>');
    const parsed = parseXml(svg);
    const bar = one(parsed, 'bar');
    expect(bar.attributes['data-label']).toBe(label);
    expect(one(bar, 'label').text).toBe(label);
    expect(one(bar, 'value').text).toBe('10 (a < b & c)');
    expect(parsed.attributes['aria-label']).toBe('A & B <c>');
    expect(one(parsed, 'axis-label').text).toBe('runs/s <higher>');
  });

  it('write n/a for a system without the figure, and draw no bar for it', () => {
    const json = comparison();
    const failed: Result = {
      scenario: 'drain',
      system: 'graphile-worker defaults',
      metrics: { completionsPerSecond: { unit: 'completions/s', higherIsBetter: true } },
      runs: [{ values: {}, failed: true, note: 'failed: it broke' }],
    };
    const bars = byClass(chart('drain-throughput', { ...json, results: [...json.results, failed] }), 'bar');

    const last = bars[bars.length - 1]!;
    expect(one(last, 'label').text).toBe('graphile-worker defaults');
    expect(one(last, 'value').text).toBe('n/a (1 of 1 failed)');
    expect(byClass(last, 'segment')).toEqual([]);
  });

  it('cut a bar short that is many times the next, and keep the others on a readable scale', () => {
    const svg = renderChart({
      title: 'timeliness',
      panels: [
        {
          axisLabel: 'ms',
          bars: [
            { label: 'ours', values: [600] },
            { label: 'peer', values: [150] },
            { label: 'at defaults', values: [10_000] },
          ],
        },
      ],
    });
    const bars = byClass(parseXml(svg), 'bar');
    const [ours, peer, slow] = bars.map((b) => one(b, 'segment'));

    expect(bars.map((b) => b.attributes['data-cut'])).toEqual([undefined, undefined, 'true']);
    expect(widthOf(ours!) / widthOf(peer!)).toBeCloseTo(4, 2);
    expect(widthOf(slow!) / widthOf(ours!)).toBeLessThan(1.5);
    expect(one(bars[2]!, 'value').text).toBe('10,000');
    expect(byClass(bars[2]!, 'cut')).toHaveLength(1);
    expect(parseXml(svg).text).toContain('is cut short');
  });

  it('draw only the charts of the scenarios that ran', () => {
    const json = comparison();
    const drainOnly = { ...json, results: json.results.filter((r) => r.scenario === 'drain') };

    expect(comparisonCharts(drainOnly).map((f) => f.name)).toEqual([
      'drain-throughput',
      'drain-cpu-per-run',
      'drain-writes-per-run',
    ]);
    expect(comparisonCharts({ ...json, results: [] })).toEqual([]);
  });
});

describe('the axis', () => {
  it('ends at a round number at or above the longest bar', () => {
    expect(niceAxis(28_095)).toEqual({ max: 30_000, step: 10_000 });
    expect(niceAxis(4_403)).toEqual({ max: 5_000, step: 1_000 });
    expect(niceAxis(357)).toEqual({ max: 400, step: 100 });
    expect(niceAxis(9.5)).toEqual({ max: 10, step: 2 });
    expect(niceAxis(0)).toEqual({ max: 1, step: 0.2 });
  });

  it('reaches the next bar when the longest is more than three times it, cutting at most a third', () => {
    expect(axisLimit([600, 150, 10_000])).toBe(600);
    expect(axisLimit([600, 500, 1_700])).toBe(1_700);
    // Six bars: at most two cut.
    expect(axisLimit([1_000_000, 50_000, 5_000, 100, 90, 80])).toBe(5_000);
  });
});
