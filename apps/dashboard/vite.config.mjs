// The dashboard's build: `npm run build` (which `npm start` runs first) ends with `vite build --config
// apps/dashboard/vite.config.mjs`. Everything it loads is in dist/dashboard, served by the API at
// /dashboard (apps/api/src/dashboard): nothing comes from a CDN.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: '/dashboard/',
  // Run states, priorities and event types by the names the API uses: the domain's own lists (one place
  // per rule), from the one domain module that imports nothing.
  resolve: { alias: { '@chronicle/domain/vocabulary': here('../../libs/domain/src/vocabulary.ts') } },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: here('../../dist/dashboard'),
    emptyOutDir: true,
    target: 'es2022',
    // One small app: no need to warn about chunk sizes below 200 KB.
    chunkSizeWarningLimit: 200,
  },
  clearScreen: false,
  logLevel: 'warn',
});
