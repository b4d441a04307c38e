import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: unknown;
  readonly loading: boolean;
  /** When the data on screen was fetched. */
  readonly updatedAt: Date | undefined;
  readonly reload: () => void;
}

/**
 * Loads when `deps` change and, with `refreshMs`, again that long after each answer (never two at
 * once, and not while the tab is hidden: it catches up when shown). The last good data stays on
 * screen while a reload is under way or fails.
 */
export function useApi<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: readonly unknown[],
  refreshMs?: number,
): Loaded<T> {
  const [state, setState] = useState<Omit<Loaded<T>, 'reload'>>({
    data: undefined,
    error: undefined,
    loading: true,
    updatedAt: undefined,
  });
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight = false;
    const fetchOnce = async (): Promise<void> => {
      if (inFlight) return;
      inFlight = true;
      setState((s) => ({ ...s, loading: true }));
      try {
        const data = await loadRef.current(controller.signal);
        if (!controller.signal.aborted) setState({ data, error: undefined, loading: false, updatedAt: new Date() });
      } catch (error) {
        if (!controller.signal.aborted) setState((s) => ({ ...s, error, loading: false }));
      }
      inFlight = false;
      if (refreshMs !== undefined && !controller.signal.aborted) timer = setTimeout(tick, refreshMs);
    };
    const tick = (): void => {
      timer = undefined;
      if (document.hidden) return; // visibilitychange resumes
      void fetchOnce();
    };
    const onVisible = (): void => {
      if (!document.hidden && timer === undefined && refreshMs !== undefined) void fetchOnce();
    };
    void fetchOnce();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      controller.abort();
      if (timer !== undefined) clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
    // The caller names what the load depends on (`deps`); `load` itself is read from a ref.
  }, [...deps, generation, refreshMs]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { ...state, reload };
}
