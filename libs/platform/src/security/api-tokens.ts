import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Tokens are stored and looked up by this hash only. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const newToken = (kind: 'admin' | 'team' | 'worker'): string =>
  `sch_${kind}_${randomBytes(24).toString('base64url')}`;

/** The token of an `Authorization: Bearer <token>` header; undefined when the header is not one. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S{1,512})$/i.exec(authorization ?? '')?.[1];
}

/** Whether a token's hash is the admin token's (constant time); never when admin calls are refused. */
export function isAdminTokenHash(hash: string, adminTokenHash: string | null | undefined): boolean {
  return adminTokenHash != null && timingSafeEqual(Buffer.from(hash), Buffer.from(adminTokenHash));
}
