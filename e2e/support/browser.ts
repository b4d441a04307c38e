import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it), or CHROMIUM_PATH. */
const CHROMIUM_CANDIDATES = [process.env['CHROMIUM_PATH'], '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The browser the tests drive, or why there is none (the tests then skip, saying so). */
export function findChromium(): { readonly path: string } | { readonly missing: string } {
  const found = CHROMIUM_CANDIDATES.find(
    (candidate) => candidate !== undefined && candidate !== '' && existsSync(candidate),
  );
  if (found !== undefined) return { path: found };
  return {
    missing: `no Chromium at ${CHROMIUM_CANDIDATES.filter(Boolean).join(' or ')} (apt-get install -y chromium)`,
  };
}

export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({ executablePath, headless: true });
}

const ROOT = path.resolve(__dirname, '../..');
/** Screenshots for a person to look at; ignored by git. */
export const SCREENSHOT_DIR = path.join(ROOT, 'e2e', 'output');

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
