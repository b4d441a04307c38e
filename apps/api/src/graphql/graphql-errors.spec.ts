import { NotAcceptableException } from '@nestjs/common';
import { GraphQLError } from 'graphql';
import { capturedLogger } from '@chronicle/testing';
import { graphqlErrorFormatter } from './graphql-errors';

/** The formatter with a logger whose lines are kept, parsed. */
function formatter() {
  const { logger, lines } = capturedLogger();
  return { format: graphqlErrorFormatter(logger, { introspection: true }), lines };
}

describe('the GraphQL error formatter', () => {
  it("answers a refused Accept as the client's 406 problem, logging no internal error", () => {
    const { format, lines } = formatter();
    const error = new GraphQLError('Accept takes no JSON', {
      originalError: new NotAcceptableException('Accept takes no JSON: ask for application/json'),
    });
    const shown = format({ message: error.message }, error);
    expect(shown.extensions).toEqual({ code: 'not-acceptable', status: 406 });
    expect(lines.filter((line) => line['level'] === 'error')).toEqual([]);
  });

  it('answers an error of ours it does not know as internal-error, with its text kept in the log', () => {
    const { format, lines } = formatter();
    const error = new GraphQLError('boom', { originalError: new TypeError('secret detail') });
    const shown = format({ message: error.message }, error);
    expect(shown.extensions).toEqual({ code: 'internal-error', status: 500 });
    expect(shown.message).not.toContain('secret detail');
    expect(lines.filter((line) => line['msg'] === 'graphql request failed')).toHaveLength(1);
  });
});
