/** The public surface of this package: what the other packages of the repository import from it. */
export { refuseDeepJson } from './json-depth';
export { type RoleModules, createApp, runProcess } from './run-process';
export { openRunServers } from './runtime';
