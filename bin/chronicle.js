#!/usr/bin/env -S node --max-semi-space-size=64
// `npx chronicle`: the built CLI (npm run build; npm start builds too).
'use strict';
/* global __dirname */
const fs = require('node:fs');
const path = require('node:path');

const main = path.join(__dirname, '..', 'dist', 'apps', 'cli', 'src', 'main.js');
if (!fs.existsSync(main)) {
  process.stderr.write('chronicle: not built yet: run `npm run build` first (`npm start` builds too)\n');
  process.exit(2);
}
require(main)
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
