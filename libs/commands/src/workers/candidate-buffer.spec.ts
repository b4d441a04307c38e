import { CANDIDATES_KEPT_MS, CandidateBuffer } from './candidate-buffer';

describe('CandidateBuffer (candidates a claim over several servers read and did not choose)', () => {
  let now = 1_000;
  const buffer = (): CandidateBuffer<{ run_id: string }> => new CandidateBuffer(() => now);
  const runs = (...ids: string[]): Array<{ run_id: string }> => ids.map((run_id) => ({ run_id }));
  const none = (): boolean => false;

  it("proposes a server's kept candidates again while they are at least what is wanted", () => {
    const kept = buffer();
    kept.keep('scope', 's1', 7, { candidates: runs('a', 'b', 'c'), capped: true });
    expect(kept.take('scope', 's1', 7, 3, none)).toEqual({ candidates: runs('a', 'b', 'c'), capped: true });
    expect(kept.take('scope', 's1', 7, 4, none)).toBeUndefined();
    expect(kept.take('scope', 's2', 7, 1, none)).toBeUndefined();
    expect(kept.take('other scope', 's1', 7, 1, none)).toBeUndefined();
  });

  it('leaves out the excluded and, for good, the chosen', () => {
    const kept = buffer();
    kept.keep('scope', 's1', 7, { candidates: runs('a', 'b', 'c', 'd'), capped: false });
    expect(kept.take('scope', 's1', 7, 2, (id) => id === 'b')?.candidates).toEqual(runs('a', 'c', 'd'));
    kept.forget('scope', 's1', new Set(['a', 'c']));
    expect(kept.take('scope', 's1', 7, 2, none)?.candidates).toEqual(runs('b', 'd'));
    expect(kept.take('scope', 's1', 7, 2, (id) => id === 'b')).toBeUndefined();
  });

  it('drops them when runs became ready since they were read, or after a moment', () => {
    const kept = buffer();
    kept.keep('scope', 's1', 7, { candidates: runs('a'), capped: false });
    expect(kept.take('scope', 's1', 8, 1, none)).toBeUndefined();
    expect(kept.take('scope', 's1', 7, 1, none)).toBeUndefined(); // dropped, not kept for the old epoch

    kept.keep('scope', 's1', 8, { candidates: runs('a'), capped: false });
    now += CANDIDATES_KEPT_MS - 1;
    expect(kept.take('scope', 's1', 8, 1, none)).toBeDefined();
    now += 1;
    expect(kept.take('scope', 's1', 8, 1, none)).toBeUndefined();
  });
});
