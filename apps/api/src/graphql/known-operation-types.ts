import { GraphQLError, type ASTVisitor, type ValidationContext } from 'graphql';

/**
 * Refuses an operation of a type the schema does not have (a subscription: this API has none), as
 * graphql-js 17's KnownOperationTypesRule does. graphql-js 16 lets it through validation and fails it as
 * it executes it, an error without a code: an internal-error (500) rather than the request's refusal.
 */
export function knownOperationTypes(context: ValidationContext): ASTVisitor {
  const schema = context.getSchema();
  const roots = {
    query: schema.getQueryType(),
    mutation: schema.getMutationType(),
    subscription: schema.getSubscriptionType(),
  };
  return {
    OperationDefinition(node) {
      if (roots[node.operation] === null || roots[node.operation] === undefined)
        context.reportError(
          new GraphQLError(`this API has no ${node.operation}s: poll its queries instead`, { nodes: node }),
        );
    },
  };
}
