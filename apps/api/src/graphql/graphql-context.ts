import { createParamDecorator, Injectable, type ExecutionContext } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { GqlExecutionContext } from '@nestjs/graphql';
import type { Request } from 'express';
import { GraphQLError } from 'graphql';
import { GetEventsOfRuns, GetPayloads, ListRunsOfJobs, type Page } from '@chronicle/commands';
import { requireReader, type Caller, type PresentRun, type RunState } from '@chronicle/domain';
import type { RecordedEvent } from '@chronicle/event-store';
import { AuthGuard, clientAddress } from '../auth/auth.guard';
import { problemOf } from '../http/problem-details.filter';
import { GRAPHQL_PAGE } from '../http/page-names';
import { BatchLoader } from './batch-loader';

/** What every resolver of one GraphQL request shares: its caller and its batch loaders. */
export interface GraphqlContext {
  readonly req: Request;
  readonly caller: Caller;
  readonly loaders: RequestLoaders;
}

/** The caller of the request's bearer token (found once per request, by the REST guard's own check). */
export const GqlCaller = createParamDecorator(
  (_: unknown, context: ExecutionContext): Caller =>
    GqlExecutionContext.create(context).getContext<GraphqlContext>().caller,
);

export const GqlLoaders = createParamDecorator(
  (_: unknown, context: ExecutionContext): RequestLoaders =>
    GqlExecutionContext.create(context).getContext<GraphqlContext>().loaders,
);

/** A request's batch loaders: each field of a list's items asks, one query answers them all. */
export class RequestLoaders {
  /** Run.events: the histories of a page of runs, one read of the log. */
  readonly events = new BatchLoader<string, readonly RecordedEvent[]>((runIds) =>
    this.queries.execute(new GetEventsOfRuns(runIds)),
  );
  /** Run.payload of runs whose payload is stored by reference: one read of the store, by SHA-256. */
  readonly payloads = new BatchLoader<string, unknown>((sha256s) => this.queries.execute(new GetPayloads(sha256s)));
  private readonly runsOfJobs = new Map<string, BatchLoader<string, Page<PresentRun>>>();

  constructor(
    private readonly queries: QueryBus,
    private readonly caller: Caller,
  ) {}

  /** Job.runs(first, after, state): the jobs asked with the same arguments go in one statement. */
  runsOfJob(
    state: RunState | undefined,
    first: number | undefined,
    after: string | undefined,
  ): BatchLoader<string, Page<PresentRun>> {
    const key = JSON.stringify([state ?? null, first ?? null, after ?? null]);
    let loader = this.runsOfJobs.get(key);
    if (loader === undefined) {
      loader = new BatchLoader((jobs) =>
        this.queries.execute(
          new ListRunsOfJobs(requireReader(this.caller), jobs, state, { after, size: first, names: GRAPHQL_PAGE }),
        ),
      );
      this.runsOfJobs.set(key, loader);
    }
    return loader;
  }
}

/** Builds each request's context: no valid bearer token, no GraphQL (401, as REST answers). */
@Injectable()
export class GraphqlContextFactory {
  constructor(
    private readonly auth: AuthGuard,
    private readonly queries: QueryBus,
  ) {}

  async create(req: Request): Promise<GraphqlContext> {
    let caller: Caller;
    try {
      caller = await this.auth.authenticate(req.headers.authorization, clientAddress(req));
    } catch (error) {
      // Thrown before any operation runs: Apollo answers with this status, the error shown by formatError.
      const { status, detail } = problemOf(error);
      throw new GraphQLError(detail, { originalError: error as Error, extensions: { http: { status } } });
    }
    return { req, caller, loaders: new RequestLoaders(this.queries, caller) };
  }
}
