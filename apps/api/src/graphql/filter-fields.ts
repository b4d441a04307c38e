import { applyDecorators } from '@nestjs/common';
import { Field } from '@nestjs/graphql';
import { IsOptional, Matches } from 'class-validator';
import { NAME_PATTERN, NAME_RULE, TEAM_ID_PATTERN, TEAM_ID_RULE } from '@chronicle/domain';

/* The optional filter arguments GraphQL's listings share, checked as REST checks their query parameters. */

/** A job or queue name (`field` names it in the refusal). */
export function NameFilter(field: 'job' | 'queue'): PropertyDecorator {
  return applyDecorators(
    Field({ nullable: true }),
    IsOptional(),
    Matches(NAME_PATTERN, { message: `${field} must be ${NAME_RULE}` }),
  );
}

/** A team: a team token lists its own team's only; the admin any team's, or all. */
export function TeamFilter(): PropertyDecorator {
  return applyDecorators(
    Field({ nullable: true, description: "A team token lists its own team's only; the admin any team's, or all." }),
    IsOptional(),
    Matches(TEAM_ID_PATTERN, { message: `team must be ${TEAM_ID_RULE}` }),
  );
}
