import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PRIORITIES, RUN_STATES } from '@chronicle/domain';

/* The answers of GET /v1/jobs and GET /v1/runs, for the OpenAPI document: the shapes of JobView and RunView. */

export class JobRetryResponse {
  @ApiProperty() maxAttempts!: number;
  @ApiProperty() baseSeconds!: number;
  @ApiProperty() maxSeconds!: number;
}

export class JobResponse {
  @ApiProperty({ example: 'billing.export-invoices' }) name!: string;
  @ApiProperty({ example: 'billing' }) team!: string;
  @ApiProperty({ example: 'billing' }) queue!: string;
  @ApiProperty({ enum: PRIORITIES }) priority!: string;
  @ApiProperty({ example: 900 }) timeoutSeconds!: number;
  @ApiProperty({ type: () => JobRetryResponse }) retry!: JobRetryResponse;
  @ApiProperty({ type: Number, nullable: true }) concurrency!: number | null;
  @ApiPropertyOptional({ description: 'any JSON value', example: { format: 'csv' } }) payload?: unknown;
  @ApiProperty({ type: Object, nullable: true, description: 'the schedule as defined, with its defaults' })
  schedule!: Record<string, unknown> | null;
  @ApiProperty({ example: 1 }) version!: number;
  @ApiProperty() paused!: boolean;
}

export class JobsPageResponse {
  @ApiProperty({ type: () => [JobResponse] }) items!: JobResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last' })
  nextCursor!: string | null;
}

export class RunResponse {
  @ApiProperty({ example: 'run_8K2' }) runId!: string;
  @ApiProperty({ example: 'billing.export-invoices' }) job!: string;
  @ApiProperty({ enum: RUN_STATES }) state!: string;
  @ApiProperty({ format: 'date-time' }) dueAt!: string;
  @ApiProperty() attempt!: number;
  @ApiProperty({ example: 'billing.export-invoices@2026-03-15T02:00:00+01:00' }) idempotencyKey!: string;
  @ApiProperty({ example: 'billing' }) queue!: string;
  @ApiProperty({ enum: PRIORITIES }) priority!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) leaseExpiresAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) lastError!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: "the job definition's version it was made from" })
  jobVersion!: number | null;
  @ApiProperty({ description: 'made from a job in dry run: its worker has no effects' }) dryRun!: boolean;
}

/** A server of runs a page could not read (runs on several servers: docs/sharding.md), and its shards. */
export class UnavailableShardsResponse {
  @ApiProperty({ example: 'db-b:5432/runs' }) server!: string;
  @ApiProperty({ type: [Number], example: [1, 5] }) shards!: number[];
}

export class RunsPageResponse {
  @ApiProperty({ type: () => [RunResponse] }) items!: RunResponse[];
  @ApiProperty({ type: String, nullable: true, description: 'pass as `cursor` for the next page; null on the last' })
  nextCursor!: string | null;
  @ApiPropertyOptional({
    type: () => [UnavailableShardsResponse],
    description: "present when a server of runs did not answer: this page lacks its shards' runs",
  })
  unavailable?: UnavailableShardsResponse[];
}
