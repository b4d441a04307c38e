import { Command, CommandHandler, Query, QueryHandler, type ICommandHandler, type IQueryHandler } from '@nestjs/cqrs';
import {
  BULK_OPERATION_ID_PATTERN,
  BULK_STALE_SECONDS,
  decideResume,
  decideStop,
  DomainError,
  listedTeam,
  type BulkAction,
  type BulkFilter,
  type BulkStatus,
  type ReaderCaller,
} from '@chronicle/domain';
import { withTransaction } from '@chronicle/platform';
import { decodeCursor, encodeCursor, sizeOf, type Page, type PageRequest } from '../listings/page';
import { RunServers } from '../shards/run-servers';
import type { BulkPreview } from './bulk-engine';
import { BulkOperationRunner } from './bulk-operation-runner';
import {
  findOperation,
  listOperations,
  lockOperation,
  resumeOperation,
  stopOperation,
  type BulkOperationRow,
} from './bulk-operations.sql';

/** A dry run of POST /v1/bulk-operations: the count and a sample, nothing acted on, nothing recorded. */
export class PreviewBulkOperation extends Query<BulkPreview> {
  constructor(
    readonly caller: ReaderCaller,
    readonly action: BulkAction,
    readonly filter: BulkFilter,
  ) {
    super();
  }
}

/** POST /v1/bulk-operations: the operation started (its snapshot, its row, its trail entry), run in the background. */
export class StartBulkOperation extends Command<BulkOperationRow> {
  constructor(
    readonly caller: ReaderCaller,
    readonly action: BulkAction,
    readonly filter: BulkFilter,
  ) {
    super();
  }
}

/** GET /v1/bulk-operations/{id}: a team's own operations, the admin's every one. */
export class GetBulkOperation extends Query<BulkOperationRow> {
  constructor(
    readonly caller: ReaderCaller,
    readonly id: string,
  ) {
    super();
  }
}

/** GET /v1/bulk-operations: newest first, keyset-paged. */
export class ListBulkOperations extends Query<Page<BulkOperationRow>> {
  constructor(
    readonly caller: ReaderCaller,
    readonly filter: { readonly team?: string | undefined; readonly status?: BulkStatus | undefined },
    readonly page: PageRequest,
  ) {
    super();
  }
}

/** :stop and :resume. Neither adds to the admin trail: the operation's one entry is its start. */
export class ChangeBulkOperation extends Command<BulkOperationRow> {
  constructor(
    readonly caller: ReaderCaller,
    readonly id: string,
    readonly change: 'stop' | 'resume',
  ) {
    super();
  }
}

@QueryHandler(PreviewBulkOperation)
export class PreviewBulkOperationHandler implements IQueryHandler<PreviewBulkOperation> {
  constructor(private readonly runner: BulkOperationRunner) {}

  execute({ caller, action, filter }: PreviewBulkOperation): Promise<BulkPreview> {
    return this.runner.engine.preview(caller, action, filter);
  }
}

@CommandHandler(StartBulkOperation)
export class StartBulkOperationHandler implements ICommandHandler<StartBulkOperation> {
  constructor(private readonly runner: BulkOperationRunner) {}

  async execute({ caller, action, filter }: StartBulkOperation): Promise<BulkOperationRow> {
    const operation = await this.runner.engine.start(caller, action, filter);
    this.runner.runInBackground(operation);
    return operation;
  }
}

@QueryHandler(GetBulkOperation)
export class GetBulkOperationHandler implements IQueryHandler<GetBulkOperation> {
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, id }: GetBulkOperation): Promise<BulkOperationRow> {
    return visibleOperation(caller, id, await findOperation(this.servers.controlServer.pool, parseId(id)));
  }
}

@QueryHandler(ListBulkOperations)
export class ListBulkOperationsHandler implements IQueryHandler<ListBulkOperations> {
  constructor(private readonly servers: RunServers) {}

  async execute({ caller, filter, page }: ListBulkOperations): Promise<Page<BulkOperationRow>> {
    const size = sizeOf(page);
    const after = page.after == null ? undefined : decodeCursor(page.after, 1, page.names.after)[0];
    const rows = await listOperations(this.servers.controlServer.pool, {
      team: listedTeam(caller, filter.team),
      status: filter.status,
      after,
      limit: size + 1,
    });
    const items = rows.slice(0, size).map((node) => ({ node, cursor: encodeCursor([node.id]) }));
    return { items, nextCursor: rows.length > size ? items[items.length - 1]!.cursor : null };
  }
}

@CommandHandler(ChangeBulkOperation)
export class ChangeBulkOperationHandler implements ICommandHandler<ChangeBulkOperation> {
  constructor(
    private readonly servers: RunServers,
    private readonly runner: BulkOperationRunner,
  ) {}

  async execute({ caller, id, change }: ChangeBulkOperation): Promise<BulkOperationRow> {
    const changed = await withTransaction(this.servers.controlServer.pool, async (tx) => {
      const operation = visibleOperation(caller, id, await lockOperation(tx, parseId(id)));
      if (change === 'stop')
        return decideStop(operation.status) === null ? operation : stopOperation(tx, id, BULK_STALE_SECONDS);
      return decideResume(operation.status) === null ? operation : resumeOperation(tx, id);
    });
    // A resumed operation that no process holds is taken up at once.
    if (change === 'resume') this.runner.wake();
    return changed;
  }
}

/** An id that cannot be an operation's is simply not found. */
function parseId(id: string): string {
  if (!BULK_OPERATION_ID_PATTERN.test(id)) throw notFound(id);
  return id;
}

function visibleOperation(caller: ReaderCaller, id: string, row: BulkOperationRow | undefined): BulkOperationRow {
  if (row === undefined || (caller.kind === 'team' && row.team !== caller.team)) throw notFound(id);
  return row;
}

function notFound(id: string): DomainError {
  return new DomainError('not-found', `bulk operation ${id.slice(0, 80)} not found`);
}
