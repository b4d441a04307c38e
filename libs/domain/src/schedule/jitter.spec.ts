import { jitterOffsetSeconds } from './jitter';

describe('deterministic jitter', () => {
  it('keeps the same offset for the same job, within the window, and none when pinned to 0', () => {
    expect(jitterOffsetSeconds('billing.export-invoices', 60)).toBe(jitterOffsetSeconds('billing.export-invoices', 60));
    expect(jitterOffsetSeconds('billing.export-invoices', 0)).toBe(0);
    for (let i = 0; i < 100; i++) {
      const offset = jitterOffsetSeconds(`job-${i}`, 60);
      expect(offset).toBeGreaterThanOrEqual(0);
      expect(offset).toBeLessThan(60);
    }
  });

  it('spreads many jobs evenly over the window', () => {
    const buckets = new Array<number>(6).fill(0);
    for (let i = 0; i < 6000; i++) buckets[Math.floor(jitterOffsetSeconds(`team-${i % 37}.job-${i}`, 60) / 10)]!++;
    // 1,000 expected per 10-second bucket; allow a few percent either way.
    for (const count of buckets) expect(Math.abs(count - 1000)).toBeLessThan(100);
  });
});
