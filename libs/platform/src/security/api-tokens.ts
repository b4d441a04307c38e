import { createHash, randomBytes } from 'node:crypto';

/** Tokens are stored and looked up by this hash only. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const newToken = (kind: 'admin' | 'team' | 'worker'): string =>
  `sch_${kind}_${randomBytes(24).toString('base64url')}`;
