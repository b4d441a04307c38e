import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import type { Request } from 'express';
import { CONFIG, LOGGER, type Config, type JsonLogger } from '@chronicle/platform';
import { AuthModule } from '../auth/auth.module';
import { GraphqlContextFactory } from './graphql-context';
import { graphqlErrorFormatter } from './graphql-errors';
import { AuditResolver } from './audit.resolver';
import { BulkOperationResolver } from './bulk-operation.resolver';
import { JobResolver } from './job.resolver';
import { OverviewResolver } from './overview.resolver';
import { acceptableAnswerPlugin } from './acceptable-answer';
import { knownOperationTypes } from './known-operation-types';
import { queryLimitsPlugin } from './query-limits';
import { QueueHistoryResolver } from './queue-history.resolver';
import { RunResolver } from './run.resolver';

@Module({ imports: [AuthModule], providers: [GraphqlContextFactory], exports: [GraphqlContextFactory] })
class GraphqlContextModule {}

/**
 * POST /graphql: code-first schema, Apollo Server on Express. The resolvers send the commands and
 * queries REST's controllers send; the caller comes from the same bearer token check.
 */
@Module({
  imports: [
    GraphQLModule.forRootAsync<ApolloDriverConfig>({
      driver: ApolloDriver,
      imports: [GraphqlContextModule],
      inject: [GraphqlContextFactory, CONFIG, LOGGER],
      useFactory: (contexts: GraphqlContextFactory, config: Config, logger: JsonLogger): ApolloDriverConfig => ({
        path: '/graphql',
        autoSchemaFile: true,
        sortSchema: true,
        // No GraphiQL page: it would load its scripts from a CDN.
        graphiql: false,
        introspection: config.graphqlIntrospection,
        includeStacktraceInErrorResponses: false,
        // Errors are shown by graphqlErrorFormatter alone, not first recast by the driver.
        autoTransformHttpErrors: false,
        allowBatchedHttpRequests: false,
        context: ({ req }: { req: Request }) => contexts.create(req),
        formatError: graphqlErrorFormatter(logger.child('graphql'), { introspection: config.graphqlIntrospection }),
        validationRules: [knownOperationTypes],
        plugins: [acceptableAnswerPlugin(), queryLimitsPlugin()],
      }),
    }),
  ],
  providers: [JobResolver, RunResolver, OverviewResolver, QueueHistoryResolver, AuditResolver, BulkOperationResolver],
})
export class GraphqlApiModule {}
