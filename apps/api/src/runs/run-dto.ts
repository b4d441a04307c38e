import { IsDefined, IsISO8601, IsInt, IsOptional, Max, Min } from 'class-validator';

/** POST /v1/jobs/{name}/runs: neither runAt nor delaySeconds means due now. */
export class EnqueueBody {
  @IsOptional() @IsDefined()
  payload?: unknown;

  @IsOptional() @IsISO8601({ strict: true, strictSeparator: true })
  runAt?: string;

  @IsOptional() @IsInt() @Min(0) @Max(31_536_000)
  delaySeconds?: number;
}
