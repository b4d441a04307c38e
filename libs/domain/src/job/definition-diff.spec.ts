import { diffDefinitions } from './definition-diff';

describe('diffDefinitions', () => {
  it('names each changed field by its path, with the values before and after', () => {
    expect(
      diffDefinitions(
        { queue: 'billing', retry: { maxAttempts: 3, baseSeconds: 30 }, schedule: { cron: '0 2 * * *' } },
        { queue: 'billing', retry: { maxAttempts: 5, baseSeconds: 30 }, schedule: null, concurrency: 2 },
      ),
    ).toEqual([
      { field: 'retry.maxAttempts', before: 3, after: 5 },
      { field: 'schedule', before: { cron: '0 2 * * *' }, after: null },
      { field: 'concurrency', after: 2 },
    ]);
  });

  it('compares arrays as a whole and finds nothing between equal definitions', () => {
    expect(diffDefinitions({ tags: ['a', 'b'] }, { tags: ['b', 'a'] })).toEqual([
      { field: 'tags', before: ['a', 'b'], after: ['b', 'a'] },
    ]);
    expect(diffDefinitions({ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2 }] } })).toEqual([]);
    expect(diffDefinitions({ payload: { x: 1 } }, {})).toEqual([{ field: 'payload', before: { x: 1 } }]);
  });
});
