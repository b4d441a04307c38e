import { DomainError } from '../domain-error';
import { assertNoSecrets, findSecrets, type SecretKind } from './secret-scanner';

const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun',
  '-----END RSA PRIVATE KEY-----',
].join('\n');
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const GITHUB = `ghp_${'a1B2c3D4e5F6g7H8i9J0'.repeat(2).slice(0, 36)}`;
const AWS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

/** Payloads as teams send them, each with the kind of credential it carries (none: clean). */
const WITH_SECRETS: ReadonlyArray<readonly [SecretKind, unknown]> = [
  ['private-key', { sftp: { host: 'sftp.example.com', key: PEM } }],
  [
    'private-key',
    { ssh: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----' },
  ],
  [
    'private-key',
    { tls: { cert: 'x', key: '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----' } },
  ],
  [
    'private-key',
    { signing: '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----' },
  ],
  ['private-key', { gpg: '-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----' }],
  ['aws-credentials', { s3: { bucket: 'exports', region: 'eu-west-1', ...AWS } }],
  [
    'aws-credentials',
    { aws: { key: 'ASIAY34FZKBOKMUTVV7A', secret: 'Uq3Qq6yCqE9bUu1+o1vNq3wP5ZzM4Zs0Hk4tJb2A', sessionToken: 'short' } },
  ],
  [
    'aws-credentials',
    [{ target: 'glacier', creds: { id: 'AKIA2OGYBAH6STMMNXNN', key: 'b8LdWl8TQ7z0tB6WjP2mJ3kq9vXcR1sYh5nF4gAe' } }],
  ],
  [
    'gcp-service-account',
    {
      gcp: {
        type: 'service_account',
        project_id: 'acme',
        private_key_id: 'abc',
        private_key: 'x',
        client_email: 'a@b.iam.gserviceaccount.com',
      },
    },
  ],
  ['gcp-service-account', { credentials: { type: 'service_account', private_key: 'MIIE...', client_id: '1' } }],
  ['github-token', { repo: 'acme/site', token: GITHUB }],
  ['github-token', { headers: { Authorization: `token ${GITHUB}` } }],
  ['github-token', { pat: `github_pat_11ABCDEFG0${'x1y2z3'.repeat(12)}` }],
  ['github-token', { deploy: { via: 'actions', credential: `gho_${'Zq9'.repeat(12)}` } }],
  ['gitlab-token', { gitlab: { url: 'https://gitlab.example.com', auth: 'glpat-xYz123AbC456dEf789gHi' } }],
  ['gitlab-token', { ci: 'glpat-9f8e7d6c5b4a3f2e1d0c' }],
  ['slack-token', { slack: { channel: '#ops', bot: 'xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx' } }],
  ['slack-token', { notify: 'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX' }],
  ['slack-token', { user: 'xoxp-1234567890-1234567890-1234567890-abcdef123456' }],
  ['stripe-key', { billing: { provider: 'stripe', key: 'sk_live_51HqLyjWDarjtT1zdp7dc' } }],
  ['stripe-key', { refunds: ['r1', 'r2'], apiKeyLive: 'rk_live_4eC39HqLyjWDarjtT1zdp7dc' }],
  ['stripe-key', { test: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' }],
  ['jwt', { callback: { url: 'https://example.com/hook', bearer: JWT } }],
  ['jwt', { session: JWT }],
  ['jwt', { headers: { authorization: `Bearer ${JWT}` } }],
  ['url-credentials', { db: 'postgres://app:s3cr3t-Pa55@db.internal:5432/app' }],
  ['url-credentials', { ftp: 'ftp://export:hunter2xyz@ftp.example.com/in' }],
  ['url-credentials', { broker: 'amqp://guest:guestpass@rabbit:5672/' }],
  ['url-credentials', { redis: 'rediss://default:Zm9vYmFyYmF6@cache.example.net:6380' }],
  ['url-credentials', { endpoints: ['https://ok.example.com', 'https://bob:topsecret@api.example.com/v1'] }],
  ['named-secret', { sftp: { host: 'files.example.com', user: 'billing', password: 'Winter2026!' } }],
  ['named-secret', { smtp: { user: 'noreply', pass: 'x', passwd: 'correct-horse-battery' } }],
  ['named-secret', { oauth: { client_id: 'abc', client_secret: 'f3a9c1d7e5b24f60' } }],
  ['named-secret', { partner: { apiKey: 'pk_9d8c7b6a5f4e3d2c' } }],
  ['named-secret', { partner: { 'api-key': 'A1B2C3D4E5F6G7H8' } }],
  ['named-secret', { vendor: { API_KEY: 'cafebabe12345678' } }],
  ['named-secret', { webhook: { url: 'https://example.com/hook', secret: 'whsec_abcdefghijk' } }],
  ['named-secret', { zip: { passphrase: 'open sesame please' } }],
  ['named-secret', { mq: { accessKey: 'LTAI4FoWz9x8y7z6' } }],
  ['named-secret', { crm: { accessToken: 'at-7f6e5d4c3b2a1908' } }],
  ['named-secret', { crm: { refresh_token: 'rt-0a1b2c3d4e5f6789' } }],
  ['named-secret', { service: { auth_token: 'z9y8x7w6v5u4t3s2' } }],
  ['named-secret', { mongo: { pwd: 'mongopass2026' } }],
  ['named-secret', { signing: { privateKey: 'MC4CAQAwBQYDK2VwBCIEIA' } }],
  ['named-secret', { vault: { token: 'hvs.CAESIJ9xLQ2o0bk' } }],
  ['named-secret', [{ step: 'upload', config: { secretKey: 'abcdEFGH1234ijkl' } }]],
  ['named-secret', { nested: { deeper: { deepest: { password: 'p@ssw0rd-2026' } } } }],
  ['named-secret', { bearerToken: 'opaque-bearer-value-123' }],
  ['named-secret', { apisecret: 'Xyz987654321abc' }],
  ['named-secret', { db: { host: 'db', Password: 'Sommer-2026' } }],
];

const CLEAN: readonly unknown[] = [
  { month: 11, format: 'csv', region: 'eu' },
  { invoiceIds: ['inv_2026_0001', 'inv_2026_0002'], currency: 'EUR' },
  { email: 'finance@example.com', template: 'monthly-report', locale: 'de-DE' },
  { url: 'https://example.com/exports/2026-11.csv', retries: 3 },
  { webhook: 'https://hooks.example.com/services/billing', method: 'POST' },
  { secretRef: 'billing/sftp' },
  { sftp: { host: 'sftp.example.com', user: 'billing', passwordRef: 'vault:billing/sftp' } },
  { password: '${SFTP_PASSWORD}' },
  { password: '{{ secrets.sftp }}' },
  { password: '********' },
  { password: '<set in vault>' },
  { password: '' },
  { password: 'x' },
  { passwordPolicy: 'strong', passwordLength: 16 },
  { tokenCount: 42, tokenizer: 'whitespace' },
  { token: 'next' },
  { pageToken: 'CAEQAA' },
  { apiVersion: '2026-11-01', apiBase: 'https://api.example.com' },
  { sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
  { commit: '9fceb02d0ae598e95dc970b74767f19372d61af8', branch: 'main' },
  { uuid: '0193a5f2-7c1e-7d4a-9b2e-3f4a5b6c7d8e' },
  { runId: 'run_01a232bda7477b589d153c6f627e6a6d' },
  { image: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==' },
  { publicKey: '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----' },
  { certificate: '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----' },
  { awsRegion: 'eu-central-1', bucket: 'exports', keyPrefix: 'billing/2026/' },
  { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', note: 'the id alone names a key; it is not the secret' },
  { mailto: 'mailto:ops@example.com', profile: 'https://example.com/@ops' },
  { git: 'git@github.com:acme/site.git', ref: 'refs/heads/main' },
  { postgres: 'postgres://db.internal:5432/app', sslmode: 'require' },
  { dsn: 'postgres://app@db.internal:5432/app' },
  { s3: 's3://exports/billing/2026-11/' },
  { cron: '0 2 * * *', timeZone: 'Europe/Berlin' },
  { items: Array.from({ length: 20 }, (_, i) => ({ sku: `SKU-${1000 + i}`, qty: i % 4 })) },
  { text: 'Please reset your password using the link in this email.' },
  { text: 'The secret to good reports is consistency.' },
  { stripeCustomer: 'cus_NffrFeUfNV2Hib', stripePrice: 'price_1MoBy5LkdIwHu7ix' },
  { stripePublishable: 'pk_live_51HqLyjWDarjtT1zdp7dc' },
  { slackChannel: '#billing-alerts', slackUser: 'U024BE7LH' },
  { githubRepo: 'acme/site', githubIssue: 4211, label: 'ghp-style-label' },
  { gitlabProject: 'group/project', pipeline: 987654 },
  { jwtIssuer: 'https://auth.example.com', audience: 'billing' },
  { header: 'eyJhbGciOiJIUzI1NiJ9' },
  { base64: 'SGVsbG8sIHdvcmxkIQ==' },
  { hmacAlgorithm: 'sha256', signatureHeader: 'X-Signature' },
  { keys: ['a', 'b', 'c'], secretCount: 0 },
  { config: { retry: { maxAttempts: 5 }, timeout: 30, secrets: ['billing/sftp', 'billing/smtp'] } },
  { phone: '+49 30 1234567', iban: 'DE89370400440532013000' },
  { path: '/var/data/export-2026-11.csv', mode: '0640' },
  { sql: "SELECT * FROM invoices WHERE month = '2026-11'" },
  { html: '<p>Hello <b>there</b></p>' },
  { markdown: '# Report\n\n- item one\n- item two' },
  { numbers: [1, 2.5, -3, 1e21, 0] },
  { flags: { dryRun: true, verbose: false } },
  { nested: { a: { b: { c: { d: 'deep but harmless' } } } } },
  { emptyObject: {}, emptyArray: [], nothing: null },
  { long: 'lorem ipsum '.repeat(200) },
  { auth: { method: 'oidc', provider: 'okta' } },
  { token: null, secret: null },
  { tokenUrl: 'https://auth.example.com/oauth/token', scope: 'read:billing' },
  { password: true },
  null,
  'a plain string payload',
  42,
];

describe('the secret scanner', () => {
  it('finds every credential of the corpus and flags none of its clean payloads (the rates, printed)', () => {
    const missed = WITH_SECRETS.filter(([kind, payload]) => !findSecrets(payload).some((f) => f.kind === kind));
    const flagged = CLEAN.filter((payload) => findSecrets(payload).length > 0);
    const detection = (WITH_SECRETS.length - missed.length) / WITH_SECRETS.length;
    const falsePositives = flagged.length / CLEAN.length;
    process.stdout.write(
      `secret scanner corpus: ${WITH_SECRETS.length} with secrets, ${CLEAN.length} clean; detection ${(detection * 100).toFixed(1)}%, false positives ${(falsePositives * 100).toFixed(1)}%\n`,
    );
    expect(WITH_SECRETS.length + CLEAN.length).toBeGreaterThanOrEqual(100);
    expect(missed).toEqual([]);
    expect(flagged).toEqual([]);
  });

  it('names the JSON path and the kind, never the value', () => {
    expect(findSecrets({ a: [{ b: 'x' }, { password: 'Winter2026!' }], url: 'ftp://u:pw12345@h' })).toEqual([
      { path: '$.a[1].password', kind: 'named-secret' },
      { path: '$.url', kind: 'url-credentials' },
    ]);
    expect(findSecrets({ 'odd key': { token: GITHUB } })).toEqual([
      { path: '$["odd key"].token', kind: 'github-token' },
    ]);
    let refusal: unknown;
    try {
      assertNoSecrets({ sftp: { password: 'Winter2026!' } });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(DomainError);
    expect(refusal).toMatchObject({ code: 'secret-in-payload', details: { field: 'payload.sftp.password' } });
    expect((refusal as Error).message).not.toContain('Winter2026');
  });

  it("lets the job's allowed paths through, and everything under them", () => {
    const payload = { sftp: { hostKey: PEM, password: 'Winter2026!' }, other: { password: 'Sommer-2026' } };
    expect(findSecrets(payload, ['$.sftp'])).toEqual([{ path: '$.other.password', kind: 'named-secret' }]);
    expect(findSecrets(payload, ['$.sftp.hostKey', '$.other.password'])).toEqual([
      { path: '$.sftp.password', kind: 'named-secret' },
    ]);
    expect(() => assertNoSecrets(payload, ['$.sftp', '$.other'])).not.toThrow();
  });
});
