import { isoTime } from './copy-rows';

describe('isoTime', () => {
  it('writes every time as toISOString does, in and out of the second it remembers', () => {
    const times = [
      0, 999, 1000, -1, -1001, 1_764_547_200_123, 1_764_547_200_999, 1_764_547_201_000, 253_402_300_800_000,
    ];
    let ms = 1_764_547_200_000;
    for (let i = 0; i < 5000; i++) times.push((ms += Math.floor(Math.random() * 700)));
    for (let i = 0; i < 1000; i++) times.push(Math.floor((Math.random() - 0.5) * 2 * 8.64e15));
    for (const time of times) expect(isoTime(new Date(time))).toBe(new Date(time).toISOString());
  });

  it('refuses an invalid date as toISOString does', () => {
    isoTime(new Date(1_764_547_200_000));
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
