import { applyDecorators, Controller, Headers, Post, Res, UseGuards } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiProperty } from '@nestjs/swagger';
import type { Response } from 'express';
import { ActOnDeadLetters, type DeadLettersProgress } from '@chronicle/commands';
import { NAME_PATTERN, NAME_RULE, requireTeam, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { boolean, dateTime, object, text, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { ApiProblems } from '../http/problem-responses';
import { problemOf } from '../http/problem-details.filter';

/** Which dead runs: each field given narrows the selection. */
const DeadLettersBody = object(
  {
    required: {},
    optional: {
      job: {
        ...text({ pattern: NAME_PATTERN, rule: NAME_RULE }),
        description: "only this job's dead runs",
        example: 'billing.export-invoices',
      },
      error: {
        ...text({ minLength: 1, maxLength: 500 }),
        description: 'their last error contains this text (case-insensitive)',
        example: 'timeout',
      },
      deadAfter: { ...dateTime(), description: 'dead at or after this instant' },
      deadBefore: { ...dateTime(), description: 'dead before this instant (at most: now)' },
      dryRun: { ...boolean(), default: false, description: 'count the runs the selection holds, act on none' },
    },
  },
  'DeadLettersBody',
);
type DeadLettersBody = Accepted<typeof DeadLettersBody>;

class DeadLettersAnswer {
  @ApiProperty({ enum: ['replay', 'discard'] }) action!: string;
  @ApiProperty() dryRun!: boolean;
  @ApiProperty({ description: 'the dead, kept runs of the team the selection held when it began' }) matched!: number;
  @ApiProperty({ description: 'of those, looked at' }) processed!: number;
  @ApiProperty({ description: 'replayed or discarded, each an event with the caller as actor' }) acted!: number;
  @ApiProperty({ description: 'changed meanwhile, so left alone' }) skipped!: number;
}

const NDJSON = 'application/x-ndjson';

/** Dead letters in bulk: every dead run of the team a filter selects, replayed or discarded in batches. */
@Controller('v1')
@UseGuards(AuthGuard)
export class DeadLettersBulkController {
  constructor(private readonly commands: CommandBus) {}

  /** POST /v1/dlq:replay (the colon is literal). */
  @Post('dlq\\:replay')
  @ApiOperation({
    operationId: 'replayDeadLetters',
    summary: 'Replay every dead run a filter selects, in batches; dryRun counts them (team)',
  })
  @BULK_DOCS()
  replay(
    @CurrentCaller() caller: Caller,
    @CompiledBody(DeadLettersBody) body: DeadLettersBody,
    @Headers('accept') accept: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    return this.act(caller, 'replay', body, accept, response);
  }

  @Post('dlq\\:discard')
  @ApiOperation({
    operationId: 'discardDeadLetters',
    summary: 'Discard every dead run a filter selects, in batches; dryRun counts them (team)',
  })
  @BULK_DOCS()
  discard(
    @CurrentCaller() caller: Caller,
    @CompiledBody(DeadLettersBody) body: DeadLettersBody,
    @Headers('accept') accept: string | undefined,
    @Res() response: Response,
  ): Promise<void> {
    return this.act(caller, 'discard', body, accept, response);
  }

  /**
   * JSON when it is done; with `Accept: application/x-ndjson`, a line of progress after each batch
   * and the answer as the last line (a failure midway: a last line `{"problem": …}`).
   */
  private async act(
    caller: Caller,
    action: 'replay' | 'discard',
    body: DeadLettersBody,
    accept: string | undefined,
    response: Response,
  ): Promise<void> {
    const team = requireTeam(caller);
    const dryRun = body.dryRun ?? false;
    const selection = {
      job: body.job ?? undefined,
      errorContains: body.error ?? undefined,
      deadAfter: body.deadAfter == null ? undefined : new Date(body.deadAfter),
      deadBefore: body.deadBefore == null ? undefined : new Date(body.deadBefore),
    };
    const answer = (progress: DeadLettersProgress): DeadLettersAnswer => ({ action, dryRun, ...progress });
    if (!(accept ?? '').includes(NDJSON)) {
      const done = await this.commands.execute(new ActOnDeadLetters(team, action, selection, dryRun));
      response.status(200).json(answer(done));
      return;
    }
    response.status(200).type(NDJSON);
    // A slow reader holds the next batch back (backpressure), rather than the lines piling up here.
    const line = (value: unknown): Promise<void> =>
      response.write(`${JSON.stringify(value)}\n`)
        ? Promise.resolve()
        : new Promise((resolve) => {
            // A reader that left will never drain: the operation goes on to its end regardless.
            response.once('drain', () => resolve());
            response.once('close', () => resolve());
          });
    try {
      const done = await this.commands.execute(
        new ActOnDeadLetters(team, action, selection, dryRun, (progress) => line({ progress })),
      );
      await line({ done: answer(done) });
    } catch (err) {
      await line({ problem: problemOf(err) });
    }
    response.end();
  }
}

function BULK_DOCS(): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'Accept',
      required: false,
      description: `${NDJSON}: a line {"progress": {...}} after each batch of 100, then {"done": {...}}`,
    }),
    ApiOkResponse({ type: DeadLettersAnswer, description: 'as JSON; the streamed lines carry the same fields' }),
    ApiProblems('validation-error', 'forbidden'),
  );
}
