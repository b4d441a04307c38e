import { DomainError } from '../domain-error';

/** What a payload must not carry: a credential, named by its kind (never shown). */
export type SecretKind =
  | 'private-key'
  | 'aws-credentials'
  | 'gcp-service-account'
  | 'github-token'
  | 'gitlab-token'
  | 'slack-token'
  | 'stripe-key'
  | 'jwt'
  | 'url-credentials'
  | 'named-secret';

export interface SecretFinding {
  /** Where: `$.sftp.password`, `$.hosts[2].url`. */
  readonly path: string;
  readonly kind: SecretKind;
}

/** Credentials recognisable by their own shape, wherever they stand. */
const BY_SHAPE: ReadonlyArray<readonly [SecretKind, RegExp]> = [
  ['private-key', /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/],
  ['github-token', /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b/],
  ['gitlab-token', /\bglpat-[A-Za-z0-9_-]{20,}\b/],
  [
    'slack-token',
    /\bxox[abposr]-[A-Za-z0-9-]{10,}|hooks\.slack\.com\/services\/T[A-Za-z0-9]+\/B[A-Za-z0-9]+\/[A-Za-z0-9]{16,}/,
  ],
  ['stripe-key', /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b/],
  ['jwt', /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/],
  ['url-credentials', /\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:@/?#]+:[^\s@/?#]+@[^\s@]/i],
];
/** An AWS access key id is an identifier; beside a 40-character secret in the same object it is a credential. */
const AWS_KEY_ID = /^(?:AKIA|ASIA)[0-9A-Z]{16}$/;
const AWS_SECRET = /^[A-Za-z0-9/+]{40}$/;
/** Keys that name a secret, once case and separators are dropped. */
const SECRET_NAMES = new Set([
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'clientsecret',
  'secretkey',
  'secretaccesskey',
  'apikey',
  'apisecret',
  'accesskey',
  'privatekey',
  'accesstoken',
  'authtoken',
  'refreshtoken',
  'bearertoken',
  'token',
]);
/** Values that stand in for a secret rather than being one. */
const PLACEHOLDER = /^(?:\$\{[^}]*\}|\{\{[^}]*\}\}|<[^>]*>|\*+|x+|redacted|changeme|none|null|true|false|-)$/i;
/** A literal secret is at least this long: shorter values are flags, modes and the like. */
const MIN_NAMED_SECRET = 6;

/**
 * The obvious credentials in a payload (docs/api.md, "Payloads"): private keys, cloud keys, platform
 * tokens, JWTs, passwords in URLs, and literal values of keys named like secrets. Payloads should name a
 * secret instead (`{"secretRef": "billing/sftp"}`). Paths under `allowed` (a job's allow-list for
 * false positives) are not reported. Iterative: the depth of the payload is bounded by the API.
 */
export function findSecrets(payload: unknown, allowed: readonly string[] = []): SecretFinding[] {
  const findings: SecretFinding[] = [];
  const stack: Array<{ value: unknown; path: string; key: string | undefined }> = [
    { value: payload, path: '$', key: undefined },
  ];
  while (stack.length > 0) {
    const { value, path, key } = stack.pop()!;
    if (isAllowed(path, allowed)) continue;
    if (typeof value === 'string') {
      const kind = kindOfString(value, key);
      if (kind !== undefined) findings.push({ path, kind });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}[${i}]`, key });
    } else if (value !== null && typeof value === 'object') {
      const object = value as Record<string, unknown>;
      const objectKind = kindOfObject(object);
      if (objectKind !== undefined) findings.push({ path, kind: objectKind });
      else
        for (const [name, child] of Object.entries(object).reverse())
          stack.push({ value: child, path: `${path}${pathSegment(name)}`, key: name });
    }
  }
  return findings;
}

/** Refuses a payload that carries one: 400 secret-in-payload, with where and what, never the value. */
export function assertNoSecrets(payload: unknown, allowed: readonly string[] = [], field = 'payload'): void {
  const [first, ...more] = findSecrets(payload, allowed);
  if (first === undefined) return;
  const where = `${field}${first.path.slice(1)}`;
  throw new DomainError(
    'secret-in-payload',
    `${where} looks like a credential (${first.kind})${more.length > 0 ? ` and ${more.length} more` : ''}: name it instead (for example {"secretRef": "team/name"}), or add the path to the job's secretsAllowed`,
    { field: where },
  );
}

function kindOfString(value: string, key: string | undefined): SecretKind | undefined {
  for (const [kind, pattern] of BY_SHAPE) if (pattern.test(value)) return kind;
  if (
    key !== undefined &&
    SECRET_NAMES.has(key.replace(/[-_\s.]/g, '').toLowerCase()) &&
    value.length >= MIN_NAMED_SECRET &&
    !PLACEHOLDER.test(value.trim())
  )
    return 'named-secret';
  return undefined;
}

function kindOfObject(object: Record<string, unknown>): SecretKind | undefined {
  if (object['type'] === 'service_account' && typeof object['private_key'] === 'string') return 'gcp-service-account';
  const strings = Object.values(object).filter((v): v is string => typeof v === 'string');
  if (strings.some((s) => AWS_KEY_ID.test(s)) && strings.some((s) => AWS_SECRET.test(s))) return 'aws-credentials';
  return undefined;
}

function pathSegment(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`;
}

/** A path allowed, or under one (`$.sftp` allows `$.sftp.password`). */
function isAllowed(path: string, allowed: readonly string[]): boolean {
  return allowed.some((a) => path === a || path.startsWith(`${a}.`) || path.startsWith(`${a}[`));
}
