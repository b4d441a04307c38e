/** The edges of a scenario's measured window, where its costs (the WAL written, the CPU time, the statements run) are read. */
export interface MeasuredWindow {
  /** Just before the clock starts. */
  open(): Promise<void>;
  /** Just after the clock stops, with the runs the window's throughput counts. */
  close(runs: number): Promise<void>;
}
