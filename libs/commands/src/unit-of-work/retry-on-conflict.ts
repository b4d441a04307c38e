import { WrongExpectedRevisionError } from '@chronicle/event-store';

/** Attempts at one decision whose append met a newer revision. */
export const CONFLICT_ATTEMPTS = 4;

/**
 * Runs `attempt` again, from its own read, when its append found the stream
 * moved on: bounded, and only for a revision conflict; anything else, and the
 * last conflict, reaches the caller. Every retry on a conflict is this one
 * (docs/architecture.md, "Where things are", the rules written once).
 */
export async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError) || n >= CONFLICT_ATTEMPTS) throw err;
    }
  }
}
