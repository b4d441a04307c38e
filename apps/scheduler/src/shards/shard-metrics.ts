import { Counter, Gauge, type Registry } from 'prom-client';

/** What a scheduler node shows of its shards on GET /metrics (docs/architecture.md, "Shards and scheduler nodes"). */
export class ShardMetrics {
  readonly held: Gauge;
  readonly granted: Counter;
  readonly refused: Counter<'pass'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.held = new Gauge({
      name: 'chronicle_shards_held',
      help: 'Shards this scheduler node holds and serves',
      registers,
    });
    this.granted = new Counter({
      name: 'chronicle_shard_grants_total',
      help: 'Shards granted to this node (at start, on a takeover, on a rebalance), each under a new epoch',
      registers,
    });
    this.refused = new Counter({
      name: 'chronicle_shard_writes_refused_total',
      help: "This node's pass writes refused by the fence: a shard was granted to another node meanwhile",
      labelNames: ['pass'],
      registers,
    });
  }
}
