import { decideJob, evolveJob, NO_JOB, type JobDefinition, type JobEvent, type JobSnapshot } from './job-decider';

const definition: JobDefinition = {
  name: 'billing.export-invoices',
  team: 'billing',
  queue: 'billing',
  priority: 'critical',
  timeoutSeconds: 900,
  retry: { maxAttempts: 5, baseSeconds: 30, maxSeconds: 1800 },
  concurrency: 1,
  payload: { format: 'csv', options: { gzip: true, level: 9 } },
  schedule: null,
};
const fold = (events: JobEvent[]): JobSnapshot => events.reduce(evolveJob, NO_JOB);
const now = new Date('2026-03-15T01:00:00Z');

describe('job decider', () => {
  it('defines version 1, then a new version only when the definition changes', () => {
    const first = decideJob({ type: 'DefineJob', definition }, NO_JOB);
    expect(first).toEqual([{ type: 'JobDefined', data: { definition, version: 1 } }]);
    const reordered = { ...definition, payload: { options: { level: 9, gzip: true }, format: 'csv' } };
    expect(decideJob({ type: 'DefineJob', definition: reordered }, fold(first))).toEqual([]);
    const changed = decideJob({ type: 'DefineJob', definition: { ...definition, timeoutSeconds: 60 } }, fold(first));
    expect(changed[0]?.data).toMatchObject({ version: 2 });
  });

  it("will not let a team redefine another team's job", () => {
    const state = fold(decideJob({ type: 'DefineJob', definition }, NO_JOB));
    expect(() => decideJob({ type: 'DefineJob', definition: { ...definition, team: 'growth' } }, state)).toThrow(
      expect.objectContaining({ code: 'not-found' }),
    );
  });

  it('pauses and resumes, each once, and keeps the pause across redefinitions', () => {
    const defined = decideJob({ type: 'DefineJob', definition }, NO_JOB);
    const paused = [...defined, ...decideJob({ type: 'PauseJob', now }, fold(defined))];
    expect(fold(paused)).toMatchObject({ paused: true });
    expect(decideJob({ type: 'PauseJob', now }, fold(paused))).toEqual([]);
    const redefined = [
      ...paused,
      ...decideJob({ type: 'DefineJob', definition: { ...definition, queue: 'other' } }, fold(paused)),
    ];
    expect(fold(redefined)).toMatchObject({ paused: true, version: 2 });
    expect(decideJob({ type: 'ResumeJob', now }, fold(redefined))).toEqual([
      { type: 'JobResumed', data: { resumedAt: now.toISOString() } },
    ]);
    expect(() => decideJob({ type: 'PauseJob', now }, NO_JOB)).toThrow(expect.objectContaining({ code: 'not-found' }));
  });
});
