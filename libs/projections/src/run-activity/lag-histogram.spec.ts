import { LAG_BUCKETS, emptyLagCounts, lagBucketOf, lagQuantileSeconds } from './lag-histogram';

const countsOf = (lagsMs: readonly number[]): number[] => {
  const counts = emptyLagCounts();
  for (const lag of lagsMs) counts[lagBucketOf(lag)]! += 1;
  return counts;
};

describe('the schedule lag histogram', () => {
  it('puts a lag in the first bucket whose bound holds it, a negative lag in the first, a huge one in the last', () => {
    expect(lagBucketOf(0)).toBe(0);
    expect(lagBucketOf(-300)).toBe(0);
    expect(lagBucketOf(10)).toBe(0);
    expect(lagBucketOf(11)).toBe(1);
    expect(lagBucketOf(1000)).toBe(6);
    expect(lagBucketOf(7_200_000)).toBe(LAG_BUCKETS - 1);
  });

  it('has no quantile without leases', () => {
    expect(lagQuantileSeconds(emptyLagCounts(), 0.5)).toBeNull();
  });

  it('interpolates inside the bucket: 100 leases between 100 and 250 ms have a p50 of 175 ms', () => {
    const counts = countsOf(new Array(100).fill(200));
    expect(lagQuantileSeconds(counts, 0.5)).toBeCloseTo(0.175, 6);
    expect(lagQuantileSeconds(counts, 0.99)).toBeCloseTo(0.2485, 6);
  });

  it('tells a late tail: 98 leases on time and 2 a minute late give p50 under 10 ms and p99 in the minute bucket', () => {
    const counts = countsOf([...new Array(98).fill(5), 45_000, 50_000]);
    expect(lagQuantileSeconds(counts, 0.5)!).toBeLessThanOrEqual(0.01);
    expect(lagQuantileSeconds(counts, 0.99)!).toBeGreaterThan(30);
    expect(lagQuantileSeconds(counts, 0.99)!).toBeLessThanOrEqual(60);
  });

  it('answers the last bound for lags above it', () => {
    expect(lagQuantileSeconds(countsOf([9_000_000]), 0.5)).toBe(3600);
  });
});
