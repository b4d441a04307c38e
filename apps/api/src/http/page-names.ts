import type { PageRequest } from '@chronicle/commands';

/** What REST's listings call a page's cursor and size (`?cursor=&limit=`): refusals name these. */
export const REST_PAGE: PageRequest['names'] = { after: 'cursor', size: 'limit' };

/** GraphQL's connections, Relay's names (`first`, `after`). */
export const GRAPHQL_PAGE: PageRequest['names'] = { after: 'after', size: 'first' };
