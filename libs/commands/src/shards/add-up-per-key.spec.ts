import { addUpPerKey } from './add-up-per-key';

interface Row {
  queue: string;
  n: number;
}

const sum = (a: Row, b: Row): Row => ({ queue: a.queue, n: a.n + b.n });

describe('addUpPerKey: the answers of every run server, one row per key', () => {
  it("gives one server's rows as they are, in their order", () => {
    const rows = [
      { queue: 'b', n: 2 },
      { queue: 'a', n: 1 },
    ];
    expect(addUpPerKey([rows], (r) => r.queue, sum)).toEqual(rows);
  });

  it('adds up the rows of a key answered by several servers, keys in the order first met', () => {
    const answers = [
      [{ queue: 'b', n: 2 }],
      [],
      [
        { queue: 'a', n: 1 },
        { queue: 'b', n: 5 },
      ],
      [{ queue: 'a', n: 3 }],
    ];
    expect(addUpPerKey(answers, (r) => r.queue, sum)).toEqual([
      { queue: 'b', n: 7 },
      { queue: 'a', n: 4 },
    ]);
  });
});
