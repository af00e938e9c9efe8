#!/usr/bin/env node
'use strict';
// Copy the grammars from grammar/ (the single copy in git) into syntaxes/
// (gitignored), where package.json points, so that vsce can package them:
// vsce cannot include files outside the extension folder. Run by
// `npm run package`; run it by hand (`npm run sync-grammars`) before
// launching the extension from this folder in VS Code.
const fs = require('fs');
const path = require('path');
const { LANGUAGES, EXTENSION_DIR } = require('../lib/textmate');

const dest = path.join(EXTENSION_DIR, 'syntaxes');
fs.mkdirSync(dest, { recursive: true });
for (const { file } of Object.values(LANGUAGES)) {
  const target = path.join(dest, path.basename(file));
  JSON.parse(fs.readFileSync(file, 'utf8')); // fail early on broken JSON
  fs.copyFileSync(file, target);
  console.log(`copied ${path.relative(EXTENSION_DIR, file)} -> ${path.relative(EXTENSION_DIR, target)}`);
}
