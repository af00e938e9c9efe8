#!/usr/bin/env node
'use strict';
// Rewrite the builtin-name patterns of grammar/shard.tmLanguage.json from
// compiler/include/shardc/Sema/Builtins.def (the one list of builtins).
// Run it after adding a builtin: `npm run sync-builtins`. With --check it
// changes nothing and exits 1 if the grammar is out of date.
const fs = require('fs');
const { LANGUAGES } = require('../lib/textmate');
const { builtins } = require('../lib/vocabulary');

const file = LANGUAGES.shard.file;
const before = fs.readFileSync(file, 'utf8');
const grammar = JSON.parse(before);
const names = { op: [], init: [], optimizer: [] };
for (const b of builtins()) names[b.kind].push(b.name);

const patterns = grammar.repository.builtins.patterns;
for (const p of patterns) {
  const kind = /\.init\./.test(p.name) ? 'init' : /\.optimizer\./.test(p.name) ? 'optimizer' : 'op';
  p.match = `\\b(?:${names[kind].join('|')})\\b`;
}
const after = JSON.stringify(grammar, null, 2) + '\n';
if (process.argv.includes('--check')) {
  if (after !== before) {
    console.error(`${file} is out of date with Builtins.def: run npm run sync-builtins`);
    process.exit(1);
  }
  console.log('builtins up to date');
} else if (after !== before) {
  fs.writeFileSync(file, after);
  console.log(`updated ${file}`);
} else {
  console.log('builtins up to date');
}
