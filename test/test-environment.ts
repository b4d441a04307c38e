/** Set by test/global-setup.ts, read by every test file. */
export const TEST_ENV = {
  adminUrl: 'SCHEDULER_TEST_ADMIN_URL',
  templateDatabase: 'SCHEDULER_TEST_TEMPLATE_DB',
  runId: 'SCHEDULER_TEST_RUN_ID',
  /** A PostgreSQL of its own that a test may restart (pg_ctl restart) without touching the others. */
  restartableUrl: 'SCHEDULER_TEST_RESTARTABLE_URL',
  restartableDataDir: 'SCHEDULER_TEST_RESTARTABLE_DATA_DIR',
  pgCtl: 'SCHEDULER_TEST_PG_CTL',
} as const;

export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}
