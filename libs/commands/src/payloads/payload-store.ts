import { createHash } from 'node:crypto';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import { INLINE_PAYLOAD_BYTES, utf8Length, type PayloadRef, type RunScheduledData } from '@chronicle/domain';
import { PG_POOL } from '@chronicle/platform';

/**
 * Where payloads over INLINE_PAYLOAD_BYTES live (docs/api.md, "Payloads"), by the SHA-256 of their
 * JSON: a payload is stored once however many runs carry it (a job's default payload, a batch of the
 * same). PostgreSQL's table by default; an S3-compatible store would implement the same two calls.
 */
export interface PayloadStore {
  /** Stores each payload under its reference; resolves once all are durable. Storing one again is a no-op. */
  put(payloads: readonly StoredPayload[]): Promise<void>;
  /** The payloads of these references, by SHA-256; one the store lacks is left out. */
  get(sha256s: readonly string[]): Promise<ReadonlyMap<string, unknown>>;
}

export interface StoredPayload {
  readonly ref: PayloadRef;
  /** The payload's JSON, as its hash was taken of. */
  readonly json: string;
}

export const PAYLOAD_STORE = Symbol('PAYLOAD_STORE');

/** The payload store in the read models' database (migrations/0017). */
@Injectable()
export class PostgresPayloadStore implements PayloadStore {
  constructor(@Inject(PG_POOL) private readonly pool: Pool) {}

  async put(payloads: readonly StoredPayload[]): Promise<void> {
    if (payloads.length === 0) return;
    await this.pool.query({
      name: 'run_payloads_put',
      // A payload stored again refreshes its day (at most once a day): retention keeps it while runs come.
      text: `INSERT INTO run_payloads (sha256, body, bytes)
             SELECT * FROM unnest($1::text[], $2::json[], $3::integer[])
             ON CONFLICT (sha256) DO UPDATE SET stored_at = now() WHERE run_payloads.stored_at < now() - interval '1 day'`,
      values: [payloads.map((p) => p.ref.sha256), payloads.map((p) => p.json), payloads.map((p) => p.ref.bytes)],
    });
  }

  async get(sha256s: readonly string[]): Promise<ReadonlyMap<string, unknown>> {
    if (sha256s.length === 0) return new Map();
    const { rows } = await this.pool.query<{ sha256: string; body: unknown }>({
      name: 'run_payloads_get',
      text: 'SELECT sha256, body FROM run_payloads WHERE sha256 = ANY($1::text[])',
      values: [[...new Set(sha256s)]],
    });
    return new Map(rows.map((r) => [r.sha256, r.body]));
  }
}

/**
 * New runs with their large payloads moved to the store: each such run's RunScheduled then carries
 * `payload: null` and a `payloadRef`. The payloads are durable before this resolves, so before any
 * event names them (a run whose append then fails leaves a payload no run names, which is harmless).
 * Runs with small payloads come back as they were.
 */
export async function storeLargePayloads(
  store: PayloadStore,
  runs: readonly RunScheduledData[],
): Promise<RunScheduledData[]> {
  const stored = new Map<string, StoredPayload>();
  const lean = runs.map((run) => {
    if (run.payloadRef !== undefined || run.payload === null || run.payload === undefined) return run;
    const json = JSON.stringify(run.payload);
    // A UTF-16 unit is 1 to 3 bytes of UTF-8: most payloads are judged by their length alone.
    if (json.length * 3 <= INLINE_PAYLOAD_BYTES) return run;
    const bytes = utf8Length(json);
    if (bytes <= INLINE_PAYLOAD_BYTES) return run;
    const ref = { sha256: createHash('sha256').update(json).digest('hex'), bytes };
    stored.set(ref.sha256, { ref, json });
    return { ...run, payload: null, payloadRef: ref };
  });
  await store.put([...stored.values()]);
  return lean;
}

/** A run's payload as given: read from `found` (what the store answered) when it is stored by reference. */
export function payloadOf(
  run: Pick<RunScheduledData, 'payload' | 'payloadRef' | 'runId'>,
  found: ReadonlyMap<string, unknown>,
): unknown {
  if (run.payloadRef === undefined) return run.payload;
  if (!found.has(run.payloadRef.sha256))
    throw new Error(`payload ${run.payloadRef.sha256} of run ${run.runId} is missing from the payload store`);
  return found.get(run.payloadRef.sha256);
}

/** The process's payload store. */
@Module({ providers: [{ provide: PAYLOAD_STORE, useClass: PostgresPayloadStore }], exports: [PAYLOAD_STORE] })
export class PayloadsModule {}

/** The payloads of runs stored by reference, by SHA-256 (GraphQL's Run.payload, batched per request). */
export class GetPayloads extends Query<ReadonlyMap<string, unknown>> {
  constructor(readonly sha256s: readonly string[]) {
    super();
  }
}

@QueryHandler(GetPayloads)
export class GetPayloadsHandler implements IQueryHandler<GetPayloads> {
  constructor(@Inject(PAYLOAD_STORE) private readonly store: PayloadStore) {}

  execute({ sha256s }: GetPayloads): Promise<ReadonlyMap<string, unknown>> {
    return this.store.get(sha256s);
  }
}
