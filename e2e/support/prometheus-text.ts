/** One scrape of GET /metrics, read as Prometheus reads the text format (0.0.4). */
export interface Scrape {
  readonly text: string;
  /** `# TYPE` of each metric family. */
  readonly types: ReadonlyMap<string, string>;
  /** What a query may name: every family, its samples' names (a histogram's `_bucket`, `_sum`, `_count`). */
  readonly names: ReadonlySet<string>;
  /** The value of one series, `name` with exactly these labels; undefined when it is absent. */
  value(name: string, labels?: Readonly<Record<string, string>>): number | undefined;
  /** Every series of a name, with its labels. */
  series(name: string): ReadonlyArray<{ labels: Record<string, string>; value: number }>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;
const COMMENT = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/;

/** Parses the exposition text, throwing on any line that is not a comment, a sample or blank. */
export function parsePrometheusText(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const [n, line] of text.split('\n').entries()) {
    if (line === '') continue;
    const comment = COMMENT.exec(line);
    if (comment !== null) {
      if (comment[1] === 'TYPE') types.set(comment[2]!, comment[3]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (sample === null) throw new Error(`line ${n + 1} is not in the Prometheus text format: ${line}`);
    const labels: Record<string, string> = {};
    const raw = sample[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < raw.length) {
      const label = LABEL.exec(raw);
      if (label === null) throw new Error(`line ${n + 1} has malformed labels: ${line}`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = sample[3] === '+Inf' ? Infinity : sample[3] === '-Inf' ? -Infinity : Number(sample[3]);
    // Prometheus parses floats as Go does: NaN in any case (prom-client writes `Nan`).
    if (Number.isNaN(value) && !/^nan$/i.test(sample[3]!)) throw new Error(`line ${n + 1} has no number: ${line}`);
    samples.push({ name: sample[1]!, labels, value });
  }
  const same = (a: Record<string, string>, b: Readonly<Record<string, string>>): boolean =>
    Object.keys(a).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => a[k] === v);
  const names = new Set([...types.keys(), ...samples.map((s) => s.name)]);
  for (const [name, type] of types)
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  return {
    text,
    types,
    names,
    value: (name, labels = {}) => samples.find((s) => s.name === name && same(s.labels, labels))?.value,
    series: (name) => samples.filter((s) => s.name === name).map(({ labels, value }) => ({ labels, value })),
  };
}

/** GET /metrics as Prometheus scrapes it (with the admin token where METRICS_AUTH=admin asks for it). */
export async function scrapeMetrics(baseUrl: string, token?: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${text}`);
  return parsePrometheusText(text);
}
