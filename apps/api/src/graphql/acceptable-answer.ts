import { NotAcceptableException } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import type { GraphqlContext } from './graphql-context';
import type { ApolloPlugin } from './query-limits';

/** The media types Apollo Server writes a GraphQL answer in (its MEDIA_TYPES), as it offers them. */
const ANSWER_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/**
 * Refuses (406) a request whose Accept takes none of them before its operation runs. Apollo Server
 * refuses it too, but only once the operation has run: a mutation sent with `Accept: text/html` made
 * its decisions, appended their events, then was answered 406.
 */
export function acceptableAnswerPlugin(): ApolloPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue }) {
          const { req } = contextValue as GraphqlContext;
          // No Accept, or an empty one, takes JSON (as Apollo reads it).
          if ((req.headers.accept ?? '') !== '' && req.accepts(ANSWER_TYPES) === false)
            // Apollo's own refusal (and its words) follows, as it finds no media type to answer in. The
            // cause is the client's: a 406 problem, not an internal error (nor a line logged as one).
            throw new GraphQLError('Accept takes no JSON', {
              extensions: { http: { status: 406 } },
              originalError: new NotAcceptableException('Accept takes no JSON: ask for application/json'),
            });
        },
      };
    },
  };
}
