import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  readonly label: string;
  readonly color: string;
  /** Dashed lines tell series apart without relying on colour alone. */
  readonly dashed?: boolean;
}

/**
 * A time series chart (uPlot, on a canvas) of one value per minute, sized to its container. The
 * canvas is a picture for the eye; the figure's table (under "Numbers") says the same in text, for
 * the keyboard and screen readers.
 */
export function TimeChart(props: {
  title: string;
  unit: string;
  /** Unix seconds of each point. */
  times: readonly number[];
  series: readonly ChartSeries[];
  /** One array per series, aligned with `times`; null where there is no value. */
  values: ReadonlyArray<ReadonlyArray<number | null>>;
  format: (value: number) => string;
  /** Counts: ticks at whole numbers only. */
  integer?: boolean;
  /** Sparse series (lag is only measured in minutes with leases): each value a dot, lone ones too. */
  dots?: boolean;
}) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const data = [props.times, ...props.values] as unknown as uPlot.AlignedData;

  useEffect(() => {
    const element = container.current;
    if (element === null) return;
    const plot = new uPlot(
      {
        width: Math.max(element.clientWidth, 200),
        height: 200,
        series: [
          {},
          ...props.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            dash: s.dashed === true ? [6, 4] : [],
            spanGaps: false,
            ...(props.dots === true ? { points: { show: true, size: 5 } } : {}),
          })),
        ],
        axes: [
          { values: (_: uPlot, ticks: number[]) => ticks.map(minuteOf) },
          {
            values: (_: uPlot, ticks: number[]) => ticks.map((t) => props.format(t)),
            size: 64,
            ...(props.integer === true ? { incrs: INTEGER_STEPS } : {}),
          },
        ],
        scales: { x: { time: true }, y: { range: (_: uPlot, _min: number, max: number) => [0, Math.max(max, 1)] } },
        // Times are UTC everywhere on the dashboard, the axis's ticks included.
        tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        // The legend names the series; the numbers are in the table below.
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
      },
      data,
      element,
    );
    chart.current = plot;
    // The container follows the page's layout (1280 or 390 wide): the canvas follows the container.
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height: 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
      chart.current = null;
    };
    // A new set of series is a new chart; new values are only new data (below).
  }, [props.series.map((s) => s.label).join('|')]);

  useEffect(() => {
    chart.current?.setData(data);
  }, [data]);

  const recent = props.times
    .map((t, i) => ({ t, i }))
    .slice(-10)
    .reverse();
  return (
    <figure class="chart">
      <figcaption>
        {props.title} <span class="unit">({props.unit})</span>
      </figcaption>
      <div ref={container} class="chart-canvas" aria-hidden="true" />
      <details>
        <summary>Numbers, last 10 minutes</summary>
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">minute (UTC)</th>
                {props.series.map((s) => (
                  <th scope="col" key={s.label}>
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {recent.map(({ t, i }) => (
                <tr key={t}>
                  <th scope="row">{minuteOf(t)}</th>
                  {props.values.map((v, j) => (
                    <td key={j}>{v[i] == null ? '—' : props.format(v[i]!)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

const INTEGER_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000];

/** 14:05, UTC, of Unix seconds. */
function minuteOf(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(11, 16);
}
