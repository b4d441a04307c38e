import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';

/**
 * deploy/prometheus/alerts.yml is valid (`promtool check rules`) and each alert fires when its unit
 * tests say (`promtool test rules alerts.test.yml`). promtool comes with Debian's `prometheus`
 * package (.ci/run installs it); without it the test is skipped, saying why.
 */
const DIR = path.resolve(__dirname, '..', 'deploy', 'prometheus');
const PROMTOOL = process.env['PROMTOOL'] ?? 'promtool';
const found = spawnSync(PROMTOOL, ['--version'], { encoding: 'utf8' });
const missing = found.error === undefined && found.status === 0 ? undefined : (found.error?.message ?? found.stderr);

if (missing !== undefined) {
  process.stderr.write(`alerts.yml's promtool checks skipped: ${PROMTOOL} is not installed (${missing})\n`);
  describe.skip(`deploy/prometheus/alerts.yml (skipped: no ${PROMTOOL}: ${missing})`, () => {
    it('passes promtool check rules and test rules', () => undefined);
  });
} else {
  describe('deploy/prometheus/alerts.yml', () => {
    const promtool = (...args: string[]): string =>
      execFileSync(PROMTOOL, args, { cwd: DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

    it('is a valid rules file with its seven alerts', () => {
      expect(promtool('check', 'rules', 'alerts.yml')).toMatch(/SUCCESS: 7 rules found/);
    });

    it('passes its unit tests: each alert fires when it should, and not before', () => {
      expect(promtool('test', 'rules', 'alerts.test.yml')).toMatch(/SUCCESS/);
    });
  });
}
