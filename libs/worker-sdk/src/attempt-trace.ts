import { context, createTraceState, SpanKind, SpanStatusCode, trace, type Link, type Span } from '@opentelemetry/api';
import type { LeasedRun } from './protocol';

/**
 * An attempt's trace (OpenTelemetry, through the API alone: spans are made and sent only where the
 * application registered an SDK, and are nothing otherwise). Each attempt of a run is a trace of its
 * own, whose first span, `process <job>`, links to the span of the request that enqueued the run (the
 * lease's traceparent): the handler runs with that span active, so its own spans are its children, and
 * the completion names it, so that the run's end event records the attempt's trace.
 */
const tracer = trace.getTracer('@chronicle/worker-sdk');

/** The span of one attempt, and how the completion names it. */
export class AttemptTrace {
  private readonly span: Span;
  /** The attempt's trace context for its completion; none where no SDK records spans. */
  readonly fields: { readonly traceparent?: string; readonly tracestate?: string };

  constructor(run: LeasedRun) {
    const enqueued = linkTo(run);
    this.span = tracer.startSpan(`process ${run.job}`, {
      kind: SpanKind.CONSUMER,
      root: true,
      ...(enqueued === undefined ? {} : { links: [enqueued] }),
      attributes: {
        'messaging.operation.type': 'process',
        'chronicle.run.id': run.runId,
        'chronicle.run.attempt': run.attempt,
        'chronicle.job': run.job,
      },
    });
    this.fields = contextOf(this.span);
  }

  /** `work` with the attempt's span active: the handler's spans are its children. */
  within<T>(work: () => T): T {
    return context.with(trace.setSpan(context.active(), this.span), work);
  }

  /** Ends the span: the handler returned, or threw `error`. */
  end(error?: string): void {
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

function contextOf(span: Span): AttemptTrace['fields'] {
  if (!span.isRecording()) return {};
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  const traceparent = `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  const tracestate = traceState?.serialize();
  return tracestate === undefined || tracestate === '' ? { traceparent } : { traceparent, tracestate };
}

/** Version 00 of the header, as the server hands it on. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The link to the enqueue's span, from the lease's traceparent, if it has one. */
function linkTo(run: LeasedRun): Link | undefined {
  const match = run.traceparent === undefined ? null : TRACEPARENT.exec(run.traceparent);
  if (match === null) return undefined;
  return {
    context: {
      traceId: match[1]!,
      spanId: match[2]!,
      traceFlags: Number.parseInt(match[3]!, 16),
      isRemote: true,
      ...(run.tracestate === undefined ? {} : { traceState: createTraceState(run.tracestate) }),
    },
  };
}
