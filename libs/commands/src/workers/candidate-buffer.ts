/** How long candidates read from a server are proposed again, unless runs became ready or places freed since. */
export const CANDIDATES_KEPT_MS = 250;
/** A server is asked for this many times the runs a call wants: its candidates then serve the calls after. */
export const CANDIDATES_READ_AHEAD = 2;
/** Scopes kept at most (a bound: a deployment's workers ask for a few). */
const MAX_SCOPES = 1_000;

interface Kept<C> {
  candidates: C[];
  readonly capped: boolean;
  readonly at: number;
  readonly epoch: number;
}

/**
 * The candidates a claim over several servers read from each server and did not choose, kept a moment for
 * the next calls of the same scope (RunClaims): a call reads only the servers whose kept candidates are
 * fewer than it wants, where it read every server each time. A server reads ahead (CANDIDATES_READ_AHEAD
 * times what was wanted), and a call takes about its share of each server's, so one read serves a few
 * calls. Kept candidates go when chosen (claimed now, or taken by another), after CANDIDATES_KEPT_MS, and
 * at once when the ready signal's epoch moves (runs became ready or places freed: a fresh read may order
 * them first). A kept run another process took meanwhile is found taken by the claim, which leaves it out
 * as it leaves out any run it lost, and fills the batch in another round.
 */
export class CandidateBuffer<C extends { readonly run_id: string }> {
  private readonly kept = new Map<string, Kept<C>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** `server`'s kept candidates of `scope` not excluded, when still fresh and at least `wanted` of them. */
  take(
    scope: string,
    server: string,
    epoch: number,
    wanted: number,
    excluded: (runId: string) => boolean,
  ): { candidates: C[]; capped: boolean } | undefined {
    const key = keyOf(scope, server);
    const kept = this.kept.get(key);
    if (kept === undefined) return undefined;
    if (kept.epoch !== epoch || this.now() - kept.at >= CANDIDATES_KEPT_MS) {
      this.kept.delete(key);
      return undefined;
    }
    const candidates = kept.candidates.filter((run) => !excluded(run.run_id));
    return candidates.length >= wanted ? { candidates, capped: kept.capped } : undefined;
  }

  /** What `server` proposed for `scope` just now, read at `epoch`. */
  keep(scope: string, server: string, epoch: number, found: { candidates: C[]; capped: boolean }): void {
    if (this.kept.size >= MAX_SCOPES) this.kept.clear();
    this.kept.set(keyOf(scope, server), { ...found, at: this.now(), epoch });
  }

  /** Runs chosen from `server`'s candidates of `scope`: no call proposes them again. */
  forget(scope: string, server: string, runIds: ReadonlySet<string>): void {
    const kept = this.kept.get(keyOf(scope, server));
    if (kept === undefined) return;
    kept.candidates = kept.candidates.filter((run) => !runIds.has(run.run_id));
  }
}

function keyOf(scope: string, server: string): string {
  return `${scope}\u0001${server}`;
}
