import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

/**
 * The lint rule that keeps libs/domain pure must actually fire: a rule that
 * never fails protects nothing. ESLint runs in a child process (it loads its
 * ESM config with import(), which jest's module sandbox does not offer).
 */
const SAMPLES: ReadonlyArray<readonly [string, string | null]> = [
  ["import { Injectable } from '@nestjs/common';\nexport const x = Injectable;\n", 'no-restricted-imports'],
  ["import { Pool } from 'pg';\nexport const x = Pool;\n", 'no-restricted-imports'],
  ["import { randomUUID } from 'node:crypto';\nexport const x = randomUUID;\n", 'no-restricted-imports'],
  ["import { createPool } from '@chronicle/platform';\nexport const x = createPool;\n", 'no-restricted-imports'],
  ['export const now = (): number => Date.now();\n', 'no-restricted-syntax'],
  ['export const now = (): Date => new Date();\n', 'no-restricted-syntax'],
  ['export const draw = (): number => Math.random();\n', 'no-restricted-syntax'],
  ['export const later = (f: () => void): unknown => setTimeout(f, 1);\n', 'no-restricted-globals'],
  ["export const env = (): unknown => process.env['X'];\n", 'no-restricted-globals'],
  ['export const due = (now: Date, delayMs: number): Date => new Date(now.getTime() + delayMs);\n', null],
];

const LINT_SAMPLES = `
const { ESLint } = require('eslint');
const samples = JSON.parse(require('fs').readFileSync(0, 'utf8'));
(async () => {
  const eslint = new ESLint();
  const out = [];
  for (const code of samples) {
    const [result] = await eslint.lintText(code, { filePath: 'libs/domain/src/example.ts' });
    out.push(result.messages.filter((m) => m.severity === 2).map((m) => m.ruleId || m.message));
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

describe('libs/domain purity rule', () => {
  let findings: string[][];
  beforeAll(() => {
    const root = path.resolve(__dirname, '../../..');
    const output = execFileSync(process.execPath, ['-e', LINT_SAMPLES], {
      cwd: root,
      input: JSON.stringify(SAMPLES.map(([code]) => code)),
      encoding: 'utf8',
    });
    findings = JSON.parse(output) as string[][];
  }, 60_000);

  it.each(SAMPLES.map(([code, rule], i) => [code, rule, i] as const))('lints %p: %p', (_code, rule, i) => {
    if (rule === null) expect(findings[i]).toEqual([]);
    else expect(findings[i]).toContain(rule);
  });
});
