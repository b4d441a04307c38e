import { capturedLogger } from '@chronicle/testing';
import { runInRequestContext } from './request-context';

describe('the logger (pino)', () => {
  it('writes one JSON line per event with the level by name, an ISO time and the fields given', () => {
    const { logger, lines } = capturedLogger({ name: 'api' });
    logger.info('ready', { port: 3000 });
    expect(lines).toEqual([
      {
        level: 'info',
        time: expect.any(String),
        pid: process.pid,
        hostname: expect.any(String),
        name: 'api',
        port: 3000,
        msg: 'ready',
      },
    ]);
    expect(new Date(lines[0]!['time'] as string).toISOString()).toBe(lines[0]!['time']);
  });

  it('drops lines below its level, and says which levels are on', () => {
    const { logger, lines } = capturedLogger({ level: 'warn' });
    logger.info('quiet');
    logger.debug('quieter');
    logger.warn('loud');
    expect(lines.map((l) => [l['level'], l['msg']])).toEqual([['warn', 'loud']]);
    expect([logger.isLevelEnabled('info'), logger.isLevelEnabled('error')]).toEqual([false, true]);
  });

  it("takes Nest's calls: the context as the last string, an error's stack before it", () => {
    const { logger, lines } = capturedLogger({ level: 'debug' });
    logger.log('Mapped {/v1/runs, GET} route', 'RouterExplorer');
    logger.verbose('detail', 'InstanceLoader');
    logger.error('boom', 'Error: boom\n    at somewhere', 'ExceptionHandler');
    expect(lines.map((l) => [l['level'], l['msg'], l['context']])).toEqual([
      ['info', 'Mapped {/v1/runs, GET} route', 'RouterExplorer'],
      ['debug', 'detail', 'InstanceLoader'],
      ['error', 'boom', 'ExceptionHandler'],
    ]);
    expect(lines[2]!['err']).toEqual({ stack: 'Error: boom\n    at somewhere' });
  });

  it('writes an error as `err` with its type, message and stack', () => {
    const { logger, lines } = capturedLogger();
    logger.error('scheduler pass failed', { err: new TypeError('no such run') });
    logger.error(new RangeError('out of range'));
    expect(lines[0]!['err']).toMatchObject({
      type: 'TypeError',
      message: 'no such run',
      stack: expect.stringContaining('TypeError: no such run\n    at '),
    });
    expect(lines[1]).toMatchObject({ msg: 'out of range', err: { type: 'RangeError' } });
  });

  it('never writes tokens, authorization headers or payloads, but does write fencing tokens', () => {
    const { logger, raw } = capturedLogger();
    logger.info('leak?', {
      token: 'sched_team_secret1',
      headers: { authorization: 'Bearer secret2' },
      req: { headers: { authorization: 'Bearer secret3' } },
      run: { payload: { card: 'secret4' } },
      payload: 'secret5',
      fencingToken: 7,
    });
    expect(raw.join('\n')).not.toMatch(/secret\d/);
    expect(JSON.parse(raw[0]!)).toMatchObject({ token: '[redacted]', fencingToken: 7, payload: '[redacted]' });
  });

  it("puts the request's id on every line logged while it is handled, children's too, and only then", async () => {
    const { logger, lines } = capturedLogger();
    const child = logger.child('commands');
    await runInRequestContext({ requestId: 'req-1' }, async () => {
      logger.info('in the request');
      await new Promise((resolve) => setImmediate(resolve));
      child.info('deep in a handler', { runId: 'r1' });
    });
    logger.info('after it');
    expect(lines.map((l) => [l['msg'], l['requestId'], l['context']])).toEqual([
      ['in the request', 'req-1', undefined],
      ['deep in a handler', 'req-1', 'commands'],
      ['after it', undefined, undefined],
    ]);
  });

  it("binds a child's context once: a child of a child replaces it", () => {
    const { logger, raw } = capturedLogger();
    logger.child('scheduler').child('vacuum').info('vacuumed');
    expect(raw[0]!.match(/"context"/g)).toHaveLength(1);
    expect(JSON.parse(raw[0]!)).toMatchObject({ context: 'vacuum' });
  });
});
