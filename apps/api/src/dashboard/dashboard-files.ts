import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';

/** One file of the built dashboard, read once at start: the bundle is small and never changes while we run. */
export interface DashboardFile {
  readonly body: Buffer;
  /** The same bytes gzipped, when that saves something (text files). */
  readonly gzipped: Buffer | undefined;
  readonly contentType: string;
  /** Strong validator of the bytes, for If-None-Match. */
  readonly etag: string;
  readonly cacheControl: string;
}

/** Where `vite build` puts the dashboard (apps/dashboard/vite.config.mjs's outDir), under the package root. */
export const DASHBOARD_BUILD_DIR = path.join('dist', 'dashboard');

/** Vite names every file under assets/ by a hash of its content: a new build is a new URL. */
const HASHED_ASSETS = 'assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The page itself, and unhashed files (favicon): always revalidated (a 304 when unchanged). */
const REVALIDATE = 'no-cache';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/;

/**
 * The built dashboard in memory, by path below /dashboard/ (`index.html`, `assets/index-1a2b.js`).
 * Only files found here are ever served: a request cannot name a path outside the build.
 * Undefined when there is no build (`npm run build` makes one).
 */
export function loadDashboardFiles(buildDir: string): ReadonlyMap<string, DashboardFile> | undefined {
  // `npm run build` replacing the build while we read it: a file listed a moment ago is gone. Read the new one.
  for (let attempt = 1; ; attempt++) {
    try {
      return readBuild(buildDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 3) throw err;
    }
  }
}

function readBuild(buildDir: string): ReadonlyMap<string, DashboardFile> | undefined {
  if (!existsSync(path.join(buildDir, 'index.html'))) return undefined;
  const files = new Map<string, DashboardFile>();
  for (const relative of listFiles(buildDir)) {
    const body = readFileSync(path.join(buildDir, relative));
    const contentType = CONTENT_TYPES[path.extname(relative)] ?? 'application/octet-stream';
    const gzipped = COMPRESSIBLE.test(contentType) && body.length > 1024 ? gzipSync(body) : undefined;
    files.set(relative, {
      body,
      gzipped: gzipped !== undefined && gzipped.length < body.length ? gzipped : undefined,
      contentType,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      cacheControl: relative.startsWith(HASHED_ASSETS) ? IMMUTABLE : REVALIDATE,
    });
  }
  return files;
}

/**
 * What a path below /dashboard/ answers with: a file of the build, or for a page of the app
 * (`jobs/billing.export`, `runs/run_01…`: job names have dots, so an extension says nothing) its
 * index.html, which routes in the browser. A missing hashed asset is not a page: undefined, a 404.
 */
export function resolveDashboardPath(
  files: ReadonlyMap<string, DashboardFile>,
  requested: string,
): DashboardFile | undefined {
  const file = files.get(requested);
  if (file !== undefined) return file;
  if (requested.startsWith(HASHED_ASSETS)) return undefined;
  return files.get('index.html');
}

/** Relative paths with forward slashes, as URLs have them. */
function listFiles(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'));
}
