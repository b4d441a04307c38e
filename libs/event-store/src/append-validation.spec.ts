import { prepareAppends, uuidV7 } from './append-validation';

describe('append validation', () => {
  it('gives events without an id a time-ordered, unique UUIDv7', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => uuidV7(1_700_000_000_000 + i));
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    const [append] = prepareAppends([{ streamId: 's', expected: 'any', events: [{ type: 'A', data: {} }] }]);
    expect(append?.events[0]?.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it.each([
    [[], /nothing to append/],
    [[{ streamId: '', expected: 'any', events: [{ type: 'A', data: {} }] }], /non-empty string/],
    [[{ streamId: 'run-\0x', expected: 'any', events: [{ type: 'A', data: {} }] }], /must not hold a NUL/],
    [[{ streamId: 's', expected: 'any', events: [] }], /no events for stream s/],
    [[{ streamId: 's', expected: -1n, events: [{ type: 'A', data: {} }] }], /negative/],
    [[{ streamId: 's', expected: 'any', events: [{ id: 'nope', type: 'A', data: {} }] }], /not a UUID/],
    [[{ streamId: 's', expected: 'any', events: [{ type: '', data: {} }] }], /event type/],
    [
      [
        { streamId: 's', expected: 'any', events: [{ type: 'A', data: {} }] },
        { streamId: 's', expected: 'any', events: [{ type: 'B', data: {} }] },
      ],
      /appears twice/,
    ],
    [
      [
        {
          streamId: 's',
          expected: 'any',
          events: [
            { id: '6f1c1f4e-8f0e-4b43-9a57-0b1f2f7c9d10', type: 'A', data: {} },
            { id: '6F1C1F4E-8F0E-4B43-9A57-0B1F2F7C9D10', type: 'B', data: {} },
          ],
        },
      ],
      /id .* appears twice/,
    ],
  ] as const)('refuses a malformed append %#', (appends, message) => {
    expect(() => prepareAppends(appends as never)).toThrow(message);
  });
});
