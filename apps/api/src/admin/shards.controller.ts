import { Controller, Get, UseGuards } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiOperation } from '@nestjs/swagger';
import { ListShards, type ShardView } from '@chronicle/commands';
import { requireAdmin, type Caller } from '@chronicle/domain';
import { AuthGuard } from '../auth/auth.guard';
import { CurrentCaller } from '../auth/current-caller';
import { ApiAnswer } from '../http/answers';
import { dateTime, integer, list, nullable, shape, text } from '../http/body-schema';
import { ref } from '../http/named-schemas';
import { ApiProblems } from '../http/problem-responses';

const Shard = shape(
  {
    required: {
      shard: { ...integer(0, 1023), description: 'hash(job name) mod SHARDS' },
      owner: {
        ...nullable(text()),
        example: 'sched-1:4182#9f2c',
        description: 'the scheduler node holding it (host:pid#instance); null: free, taken at the next round',
      },
      epoch: { ...integer(0), description: 'grants so far: writes made under an older one are refused' },
      leaseExpiresAt: nullable(dateTime()),
      lastMaterialisedAt: nullable(dateTime()),
      lastReapedAt: nullable(dateTime()),
      dueNextMinute: {
        ...integer(0),
        description: 'runs of the shard that come due within the next minute, counted on every server runs are kept on',
      },
      server: {
        ...text(),
        example: '10.0.4.12:5432/chronicle',
        description:
          "the server its runs are on: its name in the shard map (host:port/database, RUN_SHARD_URLS); 'control' without one",
      },
    },
  },
  'Shard',
);

const ShardList = shape({ required: { shards: list(ref(Shard)) } }, 'ShardList');

/**
 * The scheduler's shards and their owners (docs/architecture.md, "Scaling out"): what an operator looks at in a
 * takeover.
 */
@Controller('v1/admin')
@UseGuards(AuthGuard)
@ApiProblems('forbidden')
export class ShardsController {
  constructor(private readonly queries: QueryBus) {}

  @Get('shards')
  @ApiOperation({
    operationId: 'listShards',
    summary: "Every shard, its owner, epoch and lease, and its owner's last passes (admin)",
  })
  @ApiAnswer(200, ShardList, { description: 'one entry per shard, in order' })
  async list(@CurrentCaller() caller: Caller): Promise<{ shards: ShardView[] }> {
    requireAdmin(caller);
    return { shards: await this.queries.execute(new ListShards()) };
  }
}
