import { refuseDeepJson } from './json-depth';

const check = (text: string, max = 3): void => refuseDeepJson(max)(undefined, undefined, Buffer.from(text));

describe('refuseDeepJson', () => {
  it('lets JSON as deep as the limit through, and refuses one level more', () => {
    expect(() => check('{"a":[{"b":1}]}')).not.toThrow();
    expect(() => check('{"a":[{"b":[1]}]}')).toThrow(expect.objectContaining({ status: 400, type: 'entity.too.deep' }));
    expect(() => check('[]'.repeat(10_000))).not.toThrow(); // wide, not deep
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(() => check('{"a":"[[[[{{{{","b":"\\"[[[[[["}')).not.toThrow();
    expect(() => check('["\\\\", [[[1]]]]')).toThrow(/deeper than 3 levels/);
  });
});
