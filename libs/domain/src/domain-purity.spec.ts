import { ESLint } from 'eslint';
import * as path from 'node:path';

/** The lint rule that keeps libs/domain pure must actually fire: a rule that never fails protects nothing. */
describe('libs/domain purity rule', () => {
  const eslint = new ESLint({ cwd: path.resolve(__dirname, '../../..') });
  const lintDomain = async (code: string): Promise<string[]> => {
    const [result] = await eslint.lintText(code, { filePath: 'libs/domain/src/example.ts' });
    return (result?.messages ?? []).filter((m) => m.severity === 2).map((m) => m.ruleId ?? m.message);
  };

  it.each([
    ["import { Injectable } from '@nestjs/common';\nexport const x = Injectable;\n", 'no-restricted-imports'],
    ["import { Pool } from 'pg';\nexport const x = Pool;\n", 'no-restricted-imports'],
    ["import { randomUUID } from 'node:crypto';\nexport const x = randomUUID;\n", 'no-restricted-imports'],
    ["import { createPool } from '../../platform/src/database/pg-pool';\nexport const x = createPool;\n", 'no-restricted-imports'],
    ['export const now = (): number => Date.now();\n', 'no-restricted-syntax'],
    ['export const now = (): Date => new Date();\n', 'no-restricted-syntax'],
    ['export const draw = (): number => Math.random();\n', 'no-restricted-syntax'],
    ['export const later = (f: () => void): unknown => setTimeout(f, 1);\n', 'no-restricted-globals'],
    ["export const env = (): unknown => process.env['X'];\n", 'no-restricted-globals'],
  ])('rejects %p', async (code, rule) => {
    expect(await lintDomain(code)).toContain(rule);
  });

  it('accepts a pure function of its inputs', async () => {
    expect(await lintDomain('export const due = (now: Date, delayMs: number): Date => new Date(now.getTime() + delayMs);\n')).toEqual([]);
  });
});
