import { mkdtemp, readdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const MIGRATIONS = path.resolve(__dirname, '../migrations');

/** A folder of links to the migrations numbered before `version`: what a database had then, for migrate(). */
export async function migrationsBefore(version: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  for (const file of await readdir(MIGRATIONS))
    if (/^\d{4}_.*\.sql$/.test(file) && file < version)
      await symlink(path.join(MIGRATIONS, file), path.join(dir, file));
  return dir;
}
