import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { hashToken, newToken, type Config, type JsonLogger } from '@chronicle/platform';

/**
 * The admin token's hash: from SCHEDULER_ADMIN_TOKEN, or in embedded mode
 * generated at first start, printed once and kept in DATA_DIR/admin-token.
 * Undefined (admin calls refused) with an external database and no variable.
 */
export async function resolveAdminTokenHash(config: Config, logger: JsonLogger): Promise<string | undefined> {
  if (config.adminToken !== undefined) return hashToken(config.adminToken);
  if (config.databaseUrl !== undefined) {
    logger.warn('SCHEDULER_ADMIN_TOKEN is unset: admin calls (teams, tokens) are refused');
    return undefined;
  }
  const file = path.join(config.dataDir, 'admin-token');
  try {
    return hashToken((await fs.readFile(file, 'utf8')).trim());
  } catch {
    const token = newToken('admin');
    await fs.writeFile(file, token + '\n', { mode: 0o600 });
    // Printed once, on the first start; afterwards it is only in the file.
    process.stdout.write(`\nAdmin token (shown once, kept in ${file}):\n  ${token}\n\n`);
    return hashToken(token);
  }
}
