import { dateTime, integer, list, nullable, oneOf, shape, text } from '../http/body-schema';
import { ref } from '../http/named-schemas';
import { RateAnswer } from '../jobs/job-answers';

/* What the admin's calls answer, for the OpenAPI document. */

export const Team = shape({ required: { id: { ...text(), example: 'billing' } } }, 'Team');

/** A token, shown this once (only its hash is kept). */
export const IssuedToken = shape(
  {
    required: {
      token: { ...text(), description: 'send it as `Authorization: Bearer <token>`; it is not shown again' },
      id: {
        ...text(),
        example: 'tok_3q8Zx1mVd0Kf2LrA',
        description: "the token's name: events name it in their actor (`team:billing:token:<id>`); never the token",
      },
      kind: oneOf(['team', 'worker']),
      team: {
        ...nullable(text()),
        description: 'null: a platform worker token, serving every team granted its queues',
      },
      queues: list(text()),
      expiresAt: { ...nullable(dateTime()), description: 'null: until revoked' },
    },
  },
  'IssuedToken',
);

/** A token as listings show it: never the token, nor its hash. */
export const TokenAnswer = shape(
  {
    required: {
      id: { ...text(), example: 'tok_3q8Zx1mVd0Kf2LrA' },
      kind: oneOf(['team', 'worker']),
      team: nullable(text()),
      queues: list(text()),
      createdAt: dateTime(),
      expiresAt: nullable(dateTime()),
      revokedAt: { ...nullable(dateTime()), description: 'refused since (within 5 s on every API process)' },
      lastUsedAt: { ...nullable(dateTime()), description: 'to the minute' },
    },
  },
  'Token',
);

export const TokenList = shape({ required: { tokens: list(ref(TokenAnswer)) } }, 'TokenList');

const QueueGrant = shape(
  { required: { team: text(), weight: { ...integer(1, 100), description: 'its share of the round-robin' } } },
  'QueueGrant',
);

/** The teams a queue serves. */
export const QueueGrants = shape({ required: { queue: text(), grants: list(ref(QueueGrant)) } }, 'QueueGrants');

/** A team's enqueue quotas: null is unlimited. */
export const TeamQuotas = shape(
  {
    required: {
      team: text(),
      enqueueRatePerSecond: nullable({ type: 'number', minimum: 0 }),
      enqueueBurst: { ...nullable(integer(1)), description: 'with a rate and no burst given: max(1, ceil(rate))' },
      maxPendingRuns: nullable(integer(1)),
      leaseRate: {
        ...nullable(RateAnswer),
        description: 'at most this rate of the team\'s runs leased (docs/api.md, "Rate limits"); null: none',
      },
    },
  },
  'TeamQuotas',
);
