#!/usr/bin/env node
'use strict';
// Print each token of a .shard or .rules file with its TextMate scopes, e.g.
//   node editor/vscode/scripts/tokenize.js examples/mlp/mlp.shard
// (`npm run tokenize --prefix editor/vscode -- FILE` resolves FILE from where npm
// was started.) Options: --lines A-B (only those lines), --all (keep the root scope and
// whitespace-only tokens).
const fs = require('fs');
const path = require('path');
const { loadGrammar, languageForFile, tokenize, LANGUAGES } = require('../lib/textmate');

async function main(argv) {
  const args = argv.slice(2);
  let range = null;
  let all = false;
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--lines') {
      const m = /^(\d+)(?:-(\d+))?$/.exec(args[++i] || '');
      if (!m) throw new Error('--lines wants A or A-B');
      range = [Number(m[1]), Number(m[2] || m[1])];
    } else if (args[i] === '--all') all = true;
    else files.push(args[i]);
  }
  if (files.length === 0) {
    console.error('usage: tokenize.js [--lines A-B] [--all] FILE.shard|FILE.rules ...');
    process.exit(2);
  }
  for (const file of files) {
    const language = languageForFile(file);
    if (!language) throw new Error(`${file}: not a .shard or .rules file`);
    const grammar = await loadGrammar(language);
    const root = LANGUAGES[language].scopeName;
    if (files.length > 1) console.log(`== ${file}`);
    for (const line of tokenize(grammar, fs.readFileSync(path.resolve(process.env.INIT_CWD || process.cwd(), file), 'utf8'))) {
      if (range && (line.line < range[0] || line.line > range[1])) continue;
      for (const t of line.tokens) {
        if (!all && t.text.trim() === '') continue;
        const scopes = all ? t.scopes : t.scopes.filter((s) => s !== root);
        console.log(`${String(line.line).padStart(3)}:${String(t.start + 1).padEnd(3)} ${JSON.stringify(t.text).padEnd(18)} ${scopes.join(' ')}`);
      }
    }
  }
}

main(process.argv).catch((e) => { console.error(e.message || e); process.exit(1); });
