import { Controller, Get, Param, Put, UseGuards } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation } from '@nestjs/swagger';
import { GetQueueLimits, SetQueueLimits, type QueueLimits } from '@chronicle/commands';
import { actorOf, parseName, rateLimit, requireAdmin, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { integer, nullable, object, shape, text, type Accepted } from '../http/body-schema';
import { CompiledBody } from '../http/compiled-body';
import { ApiProblems } from '../http/problem-responses';
import { RateAnswer } from '../jobs/job-answers';
import { RateBody } from '../jobs/job-dto';

/** PUT /v1/queues/{queue}/limits: the queue's cap; null or left out: none. */
const QueueLimitsBody = object(
  {
    required: {},
    optional: {
      concurrency: {
        ...integer(1, 100_000),
        description: 'at most this many runs of the queue leased at once, whatever their jobs and teams; null: no cap',
      },
      rate: {
        ...RateBody,
        description: 'at most this rate of runs of the queue leased, whatever their jobs and teams; null: none',
      },
    },
  },
  'QueueLimitsBody',
);
type QueueLimitsBody = Accepted<typeof QueueLimitsBody>;

/** A queue's cap. */
export const QueueLimitsAnswer = shape(
  {
    required: {
      queue: text(),
      concurrency: {
        ...nullable(integer(1)),
        description: 'at most this many of its runs leased at once; null: no cap',
      },
      rate: { ...nullable(RateAnswer), description: 'at most this rate of its runs leased; null: none' },
    },
  },
  'QueueLimits',
);

interface QueueLimitsView extends QueueLimits {
  readonly queue: string;
}

/**
 * A queue's cap (docs/api.md, "Dispatch: priorities, fairness, concurrency"), beside its jobs' concurrency
 * and their keys': set by the admin, as the queue's grants are.
 */
@Controller('v1/queues')
@UseGuards(AuthGuard)
@ApiProblems('forbidden') // the admin only
export class QueueLimitsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get(':queue/limits')
  @ApiOperation({ operationId: 'getQueueLimits', summary: "A queue's cap on its leased runs (admin)" })
  @ApiAnswer(200, QueueLimitsAnswer, { description: 'its cap; concurrency null: none' })
  @ApiProblems('validation-error')
  async get(@CurrentCaller() caller: Caller, @Param('queue') queue: string): Promise<QueueLimitsView> {
    requireAdmin(caller);
    const name = parseName(queue, 'queue');
    return { queue: name, ...(await this.queries.execute(new GetQueueLimits(name))) };
  }

  @Put(':queue/limits')
  @ApiOperation({
    operationId: 'setQueueLimits',
    summary: "Set a queue's cap on its leased runs, or remove it (admin)",
  })
  @ApiAnswer(200, QueueLimitsAnswer, { description: 'its cap now' })
  @ApiProblems('validation-error')
  async put(
    @CurrentCaller() caller: Caller,
    @Param('queue') queue: string,
    @CompiledBody(QueueLimitsBody) body: QueueLimitsBody,
  ): Promise<QueueLimitsView> {
    requireAdmin(caller);
    const name = parseName(queue, 'queue');
    const limits = { concurrency: body.concurrency ?? null, rate: body.rate == null ? null : rateLimit(body.rate) };
    return { queue: name, ...(await this.commands.execute(new SetQueueLimits(name, limits, actorOf(caller)))) };
  }
}
