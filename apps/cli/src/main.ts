import { Command, CommanderError } from 'commander';
import { apiCommands } from './api-commands';
import { bulkCommand } from './bulk-commands';
import type * as OperatorCommands from './operator-commands';
import { CliError, EXIT, Output } from './output';

/**
 * `npx chronicle <command>`: the API's commands against a running server
 * (CHRONICLE_URL, CHRONICLE_TOKEN), and the operator's against the database
 * (DATABASE_URL). Exit codes: 0 done, 1 the command found a problem or was
 * refused, 2 a wrong command line or setting, 3 the database or server
 * unreachable.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const json = argv.includes('--json');
  const output = new Output(json);
  const program = new Command('chronicle')
    .description('the Chronicle scheduler from the command line')
    .option('--json', 'print results as JSON, for scripts')
    .option('--url <url>', 'the API commands: the server (default CHRONICLE_URL, else http://localhost:3000)')
    .option('--token <token>', 'the API commands: a team or admin token (default CHRONICLE_TOKEN)')
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  const flags = (): { url?: string; token?: string } => program.opts<{ url?: string; token?: string }>();
  const api = [...apiCommands(output, flags), bulkCommand(output, flags)];
  // The operator's commands load the whole server side (the log, the projections, the shard tools): half a
  // second of every call. An API command, the usual call from a script, goes without them.
  const operator = isApiCommand(argv, api) ? undefined : loadOperatorCommands();
  for (const command of operator?.operatorCommands(output) ?? []) program.addCommand(command.exitOverride());
  for (const command of api) program.addCommand(exitOverrideAll(command));
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
    return operator?.isUnavailable(err) === true ? EXIT.unavailable : EXIT.failed;
  }
}

/** The command line names one of the API's commands (the first word that is not a global option's). */
function isApiCommand(argv: readonly string[], api: readonly Command[]): boolean {
  const withValue = new Set(['--url', '--token']);
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (withValue.has(word)) i++;
    else if (!word.startsWith('-')) return api.some((command) => command.name() === word);
  }
  return false;
}

function loadOperatorCommands(): typeof OperatorCommands {
  // require, not import(): a relative import() in CommonJS output would go through ESM resolution.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('./operator-commands') as typeof OperatorCommands;
}

/** Every subcommand reports a wrong command line by throwing, as the program does. */
function exitOverrideAll(command: Command): Command {
  command.exitOverride();
  for (const sub of command.commands) exitOverrideAll(sub);
  return command;
}

if (require.main === module) void main(process.argv.slice(2)).then((code) => (process.exitCode = code));
