import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Caller } from '@chronicle/domain';

/** The caller AuthGuard found for the request's bearer token. */
export const CurrentCaller = createParamDecorator((_: unknown, context: ExecutionContext): Caller => {
  const caller = context.switchToHttp().getRequest<{ caller?: Caller }>().caller;
  if (caller === undefined) throw new Error('AuthGuard did not run');
  return caller;
});
