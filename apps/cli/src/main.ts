import { Command, CommanderError } from 'commander';
import { isUnavailable } from '@chronicle/platform';
import { operatorCommands } from './operator-commands';
import { CliError, EXIT, Output } from './output';

/**
 * `npx chronicle <command>`: the operator's commands against the database
 * (DATABASE_URL). Exit codes: 0 done, 1 the command found a problem, 2 a
 * wrong command line or setting, 3 the database or server unreachable.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const json = argv.includes('--json');
  const output = new Output(json);
  const program = new Command('chronicle')
    .description('the Chronicle scheduler from the command line')
    .option('--json', 'print results as JSON, for scripts')
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  for (const command of operatorCommands(output)) program.addCommand(command.exitOverride());
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof CliError) {
      output.error(err.message);
      return err.exitCode;
    }
    output.error(err instanceof Error ? err.message : String(err));
    return isUnavailable(err) ? EXIT.unavailable : EXIT.failed;
  }
}

if (require.main === module) void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
