import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { Pool } from 'pg';
import { adminTokenId, bearerToken, hashToken, isAdminTokenHash, ADMIN_TOKEN_HASH, PG_POOL } from '@chronicle/platform';
import { DomainError, type Caller } from '@chronicle/domain';
import { findToken } from '@chronicle/commands';
import { addressKey, FailedAuthLimiter, tokenKey } from './failed-auth-limiter';

/** Every /v1 call, and every GraphQL request: `Authorization: Bearer <token>`, or 401. */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly known = new Map<string, { caller: Caller; until: number }>();

  constructor(
    @Inject(PG_POOL) private readonly pool: Pool,
    @Inject(ADMIN_TOKEN_HASH) private readonly adminTokenHash: string | null,
    private readonly limiter: FailedAuthLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request & { caller?: Caller }>();
    request.caller = await this.authenticate(request.headers.authorization, clientAddress(request));
    return true;
  }

  /**
   * The caller of an Authorization header's bearer token, or an `unauthorized` refusal. Refused
   * `rate-limited` instead: a token that failed too often (without a lookup), and, from an address that
   * failed too often, no token or one that is not valid. A valid token passes from any address.
   */
  async authenticate(authorization: string | undefined, address: string): Promise<Caller> {
    const token = bearerToken(authorization);
    const fromAddress = addressKey(address);
    if (token === undefined) {
      this.limiter.refuseIfLimited(fromAddress);
      this.limiter.recordFailure([fromAddress], 'missing');
      throw unauthorized('send Authorization: Bearer <token>');
    }
    const hash = hashToken(token);
    if (isAdminTokenHash(hash, this.adminTokenHash)) return { kind: 'admin', tokenId: adminTokenId(hash) };
    const known = this.known.get(hash);
    if (known !== undefined && known.until > Date.now()) return known.caller;
    const presented = tokenKey(hash);
    this.limiter.refuseIfLimited(presented);
    try {
      return await this.callerOf(hash);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'unauthorized') {
        if (this.limiter.isLimited(fromAddress)) {
          this.limiter.countFailure([presented]);
          this.limiter.refuseIfLimited(fromAddress);
        }
        this.limiter.recordFailure([fromAddress, presented], 'unknown');
      }
      throw err;
    }
  }

  /**
   * Workers call many times a second with one token: a token's caller is kept for a few seconds, so a
   * revocation is seen within KNOWN_FOR_MS on every API process.
   */
  private async callerOf(hash: string): Promise<Caller> {
    const row = await findToken(this.pool, hash);
    if (row === undefined || row.kind === 'admin') throw unauthorized('the token is not valid');
    let caller: Caller;
    const tokenId = row.token_id;
    if (row.kind === 'worker') caller = { kind: 'worker', team: row.team, queues: row.queues, tokenId };
    else if (row.team !== null) caller = { kind: 'team', team: row.team, queues: row.queues, tokenId };
    else throw unauthorized('the token is not valid');
    if (this.known.size >= KNOWN_TOKENS) this.known.clear();
    // Kept a few seconds (a revoked token is refused within that), never past the token's expiry.
    this.known.set(hash, { caller, until: Math.min(Date.now() + KNOWN_FOR_MS, row.expires_at?.getTime() ?? Infinity) });
    return caller;
  }
}

const KNOWN_TOKENS = 10_000;
const KNOWN_FOR_MS = 5_000;

function unauthorized(detail: string): DomainError {
  return new DomainError('unauthorized', detail);
}

/** Where a request comes from, as the HTTP server saw it (behind a proxy: the proxy, unless Express trusts it). */
export function clientAddress(request: Request): string {
  return request.ip ?? request.socket.remoteAddress ?? 'unknown';
}
