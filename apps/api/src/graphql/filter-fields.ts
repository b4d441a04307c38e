import { Field } from '@nestjs/graphql';
import { NAME_PATTERN, NAME_RULE, TEAM_ID_PATTERN, TEAM_ID_RULE } from '@chronicle/domain';
import { nullable, text, type Fields, type Schema } from '../http/body-schema';
import { compileBody } from '../http/compiled-body';

/*
 * GraphQL's arguments, checked by the validator REST's bodies and query strings have (compiled-body.ts).
 * GraphQL's own type checking comes first: it refuses unknown arguments and input fields and values of
 * the wrong type (a `validation-error` too, graphql-errors.ts). The compiled check then holds the values
 * given to the rules GraphQL's types cannot say (a name's pattern, a length), in REST's words
 * (`filter.job must be a name of ...`).
 */

/** A job or queue name, as REST's listings take one. */
export const NAME_FILTER = text({ pattern: NAME_PATTERN, rule: NAME_RULE });

/** A team: a team token lists its own team's only; the admin any team's, or all. */
export const TEAM_FILTER = text({ pattern: TEAM_ID_PATTERN, rule: TEAM_ID_RULE });

/** The optional `job` or `queue` argument (or input field) of a listing; NAME_FILTER is its rule. */
export function NameFilter(): PropertyDecorator {
  return Field({ nullable: true });
}

/** The optional `team` argument (or input field) of a listing; TEAM_FILTER is its rule. */
export function TeamFilter(): PropertyDecorator {
  return Field({
    nullable: true,
    description: "A team token lists its own team's only; the admin any team's, or all.",
  });
}

/**
 * The arguments of a field (or an input's fields, nested as an argument's schema) held to these rules,
 * each when given: null, GraphQL's "not given", passes, and the others are GraphQL's to check.
 */
export function argumentsOf(fields: Fields): Schema<unknown> {
  const properties = Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, nullable(schema)]));
  return { type: 'object', properties };
}

/** The check of a field's arguments: a refusal is a validation-error naming the argument. */
export function argumentsCheck(fields: Fields): (args: unknown) => void {
  const check = compileBody(argumentsOf(fields), 'the arguments');
  return (args) => void check(args);
}
