import {
  context,
  createTraceState,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type * as AsyncHooks from '@opentelemetry/context-async-hooks';
import type { TraceContext } from '@chronicle/domain';
import type * as Core from '@opentelemetry/core';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTrace from '@opentelemetry/sdk-trace';

/**
 * OpenTelemetry traces (docs/operations.md, "Traces"): spans for the API's calls, claims, appends and
 * the projector's batches, exported over OTLP/HTTP once startTracing found an endpoint to send them to
 * (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Without one no SDK is loaded,
 * and every helper here runs its work alone: a flag read, no span made.
 */
let tracing = false;
const tracer = trace.getTracer('chronicle');

/** Version 00 of the header: a trace id and a span id, neither all zeros, and the flags. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** At most 32 list members of printable ASCII (W3C Trace Context, "tracestate"), 512 characters here. */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** A caller's trace context, if its headers (or fields) hold a well-formed one; a tracestate alone is none. */
export function traceContextOf(traceparent: unknown, tracestate?: unknown): TraceContext | undefined {
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return undefined;
  return typeof tracestate === 'string' && TRACESTATE.test(tracestate) ? { traceparent, tracestate } : { traceparent };
}

/** A span's context as a TraceContext. */
export function traceContextOfSpan(span: SpanContext): TraceContext {
  const traceparent = `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
  const tracestate = span.traceState?.serialize();
  return tracestate === undefined || tracestate === '' ? { traceparent } : { traceparent, tracestate };
}

/** A TraceContext as the remote span context a span links to. */
function spanContextOf({ traceparent, tracestate }: TraceContext): SpanContext {
  const [, traceId, spanId, flags] = traceparent.split('-') as [string, string, string, string];
  return {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(tracestate === undefined ? {} : { traceState: createTraceState(tracestate) }),
  };
}

/** Whether spans are made and exported (startTracing found an endpoint). */
export function tracingOn(): boolean {
  return tracing;
}

export interface Tracing {
  /** Sends what is left and stops making spans. */
  shutdown(): Promise<void>;
}

/**
 * Where spans are sent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or OTEL_EXPORTER_OTLP_ENDPOINT with
 * `/v1/traces` (the OTLP exporter specification's rule); none with neither, or with OTEL_SDK_DISABLED.
 */
function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  if (env['OTEL_SDK_DISABLED'] === 'true') return undefined;
  const traces = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  if (traces !== undefined && traces !== '') return traces;
  const endpoint = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  return endpoint === undefined || endpoint === '' ? undefined : `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * The OpenTelemetry SDK, registered for this process when the environment names an endpoint: W3C trace
 * context propagation, spans batched to OTLP/HTTP (JSON), `service.name` OTEL_SERVICE_NAME or `service`.
 * The exporter reads its other settings (headers, timeout) from the environment as the specification
 * says. None: null, and nothing loaded.
 */
export function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Tracing | null {
  const url = tracesUrl(env);
  if (url === undefined) return null;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only where traces are sent */
  const { TracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace') as typeof SdkTrace;
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks') as typeof AsyncHooks;
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof Core;
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof Resources;
  /* eslint-enable @typescript-eslint/no-require-imports */
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env['OTEL_SERVICE_NAME'] ?? service }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url }),
        // The specification's variable for the batches' interval (5 s by default), which this SDK reads no more.
        ...positive(env['OTEL_BSP_SCHEDULE_DELAY'], (ms) => ({ scheduledDelayMillis: ms })),
      }),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  tracing = true;
  return {
    shutdown: async () => {
      tracing = false;
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

function positive<T>(value: string | undefined, as: (n: number) => T): T | Record<string, never> {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n > 0 ? as(n) : {};
}

/**
 * `work` in a span of its own, a child of the active one (an API call's, a projector batch's), linked to
 * the spans `links` names (asked for only when tracing): ended when the work settles, an error recorded
 * on it. Without tracing, `work` alone.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
  links?: () => readonly TraceContext[],
): Promise<T> {
  if (!tracing) return work(undefined);
  const linked = links?.() ?? [];
  return tracer.startActiveSpan(
    name,
    { attributes, ...(linked.length === 0 ? {} : { links: linked.map(linkTo) }) },
    async (span) => {
      try {
        return await work(span);
      } catch (err) {
        span.recordException(err as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

function linkTo(to: TraceContext): Link {
  return { context: spanContextOf(to) };
}

/**
 * An HTTP request's server span, a child of the caller's trace context (its `traceparent` header), or
 * undefined without tracing. `within` runs the rest of the request's chain with the span active.
 */
export function serverSpan(
  method: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): { span: Span; within: <T>(work: () => T) => T } | undefined {
  if (!tracing) return undefined;
  const parent = propagation.extract(context.active(), headers);
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  const active = trace.setSpan(parent, span);
  return { span, within: (work) => context.with(active, work) };
}
