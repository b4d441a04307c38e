import { GraphQLError, GraphQLScalarType, Kind, type ObjectFieldNode, type ValueNode } from 'graphql';
import { isInstant } from '../http/instants';

/**
 * An instant: ISO 8601 out (UTC, `2026-03-15T01:00:00.000Z`), and in by the rule REST's bodies use
 * (strict ISO 8601, http/instants.ts), as a Date.
 */
export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An instant as an ISO 8601 string, like 2026-03-15T01:00:00Z; answers are in UTC.',
  serialize(value: unknown): string {
    const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
    if (date === undefined || Number.isNaN(date.getTime())) throw new GraphQLError('DateTime cannot represent this');
    return date.toISOString();
  },
  parseValue: (value: unknown): Date => parseDateTime(value),
  parseLiteral: (node: ValueNode): Date => parseDateTime(node.kind === Kind.STRING ? node.value : undefined),
});

function parseDateTime(value: unknown): Date {
  if (!isInstant(value)) throw new GraphQLError('DateTime must be an ISO 8601 string, like 2026-03-15T01:00:00Z');
  return new Date(value);
}

/** Any JSON value: a payload, a job's definition, an event's data. */
export const JsonScalar = new GraphQLScalarType<unknown, unknown>({
  name: 'JSON',
  description: 'Any JSON value: object, array, string, number, boolean or null.',
  serialize: (value: unknown): unknown => value,
  parseValue: (value: unknown): unknown => value,
  parseLiteral: (node: ValueNode, variables?: Readonly<Record<string, unknown>> | null): unknown =>
    literal(node, variables ?? {}),
});

function literal(node: ValueNode, variables: Readonly<Record<string, unknown>>): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((value) => literal(value, variables));
    case Kind.OBJECT:
      return Object.fromEntries(
        node.fields.map((field: ObjectFieldNode) => [field.name.value, literal(field.value, variables)]),
      );
    case Kind.VARIABLE:
      return variables[node.name.value];
    case Kind.ENUM:
      throw new GraphQLError(`JSON cannot hold the enum value ${node.value}; quote it`);
    default: {
      const unknown: never = node;
      throw new GraphQLError(`JSON cannot represent ${String((unknown as ValueNode).kind)}`);
    }
  }
}
