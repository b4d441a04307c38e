import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The checkout's root (where package.json is), from source under ts or from dist/. */
export function projectRoot(from: string = __dirname): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}
