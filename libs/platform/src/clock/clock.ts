/** Time comes in as data: the domain takes `now` from a Clock, never from Date.now(). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const CLOCK = Symbol('CLOCK');
