import { startTracing, traceContextOf, tracingOn } from './tracing';

describe('trace context and the tracing switch', () => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

  it('takes a well-formed W3C traceparent, with its tracestate when that is sane', () => {
    expect(traceContextOf(traceparent, 'vendor=blue')).toEqual({ traceparent, tracestate: 'vendor=blue' });
    expect(traceContextOf(traceparent, 'x'.repeat(513))).toEqual({ traceparent });
    expect(traceContextOf(traceparent, ['a', 'b'])).toEqual({ traceparent });
  });

  it.each([
    ['another version', traceparent.replace(/^00/, 'ff')],
    ['upper case', traceparent.toUpperCase()],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['an all-zero span id', `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`],
    ['a short span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01'],
    ['two headers', [traceparent, traceparent]],
  ])('ignores a traceparent of %s', (_, value) => {
    expect(traceContextOf(value, 'vendor=blue')).toBeUndefined();
  });

  it('loads nothing and makes no span without an endpoint, or with the SDK disabled', () => {
    expect(startTracing('chronicle-test', {})).toBeNull();
    expect(startTracing('chronicle-test', { OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
    expect(
      startTracing('chronicle-test', {
        OTEL_SDK_DISABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      }),
    ).toBeNull();
    expect(tracingOn()).toBe(false);
  });
});
