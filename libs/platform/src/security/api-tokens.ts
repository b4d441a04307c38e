import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Tokens are stored and looked up by this hash only. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const newToken = (kind: 'admin' | 'team' | 'worker'): string =>
  `sch_${kind}_${randomBytes(24).toString('base64url')}`;

/** A token's public name, for listings and events' actors: random, telling nothing of the token. */
export const newTokenId = (): string => `tok_${randomBytes(12).toString('base64url')}`;

/**
 * The admin token's name: it is configured, not issued, so its id comes from its hash (16 hex digits
 * of a SHA-256 of 24 random bytes: nothing to learn the token from).
 */
export const adminTokenId = (tokenHash: string): string => `tok_${tokenHash.slice(0, 16)}`;

/** The token of an `Authorization: Bearer <token>` header; undefined when the header is not one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S{1,512})$/i.exec(authorization ?? '')?.[1];
}

/** Whether a token's hash is the admin token's (constant time); never when admin calls are refused. */
export function isAdminTokenHash(hash: string, adminTokenHash: string | null | undefined): boolean {
  return adminTokenHash != null && timingSafeEqual(Buffer.from(hash), Buffer.from(adminTokenHash));
}
