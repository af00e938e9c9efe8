'use strict';
// Shared helpers for the tests and scripts/tokenize.js: load the TextMate
// grammars from grammar/ (the single copy in git) with vscode-textmate and the
// Oniguruma WASM build, and tokenize whole files.
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const EXTENSION_DIR = path.resolve(__dirname, '..');
const REPO_ROOT = path.resolve(EXTENSION_DIR, '..', '..');
const GRAMMAR_DIR = path.join(REPO_ROOT, 'grammar');

// Language id -> grammar file, scope name, file extension and .g4 files whose
// literals the grammar must highlight.
const LANGUAGES = {
  shard: {
    file: path.join(GRAMMAR_DIR, 'shard.tmLanguage.json'),
    scopeName: 'source.shard',
    extension: '.shard',
    g4: ['ShardModel.g4', 'ShardLexerCommon.g4'],
  },
  'shard-rules': {
    file: path.join(GRAMMAR_DIR, 'shard-rules.tmLanguage.json'),
    scopeName: 'source.shard-rules',
    extension: '.rules',
    g4: ['ShardRules.g4', 'ShardLexerCommon.g4'],
  },
};

let onigLibPromise = null;
function onigLib() {
  if (!onigLibPromise) {
    const wasmPath = path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm');
    const buf = fs.readFileSync(wasmPath);
    const wasm = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    onigLibPromise = oniguruma.loadWASM(wasm).then(() => ({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }));
  }
  return onigLibPromise;
}

// Load a grammar. `raw` optionally replaces the file's JSON (an object), so
// tests can load a modified copy.
async function loadGrammar(language, raw) {
  const lang = LANGUAGES[language];
  if (!lang) throw new Error(`unknown language ${language}`);
  const registry = new vsctm.Registry({
    onigLib: onigLib(),
    loadGrammar: async (scopeName) => {
      if (scopeName !== lang.scopeName) return null;
      const text = raw ? JSON.stringify(raw) : fs.readFileSync(lang.file, 'utf8');
      return vsctm.parseRawGrammar(text, lang.file);
    },
  });
  const grammar = await registry.loadGrammar(lang.scopeName);
  if (!grammar) throw new Error(`could not load ${lang.scopeName}`);
  return grammar;
}

function languageForFile(file) {
  for (const [id, lang] of Object.entries(LANGUAGES)) if (file.endsWith(lang.extension)) return id;
  return null;
}

// Tokenize text. Returns one entry per line: { line, text, offset, tokens },
// each token { text, start, end, scopes } with columns relative to the line
// and `offset` the line's start in the whole text.
function tokenize(grammar, text) {
  const out = [];
  let ruleStack = vsctm.INITIAL;
  let offset = 0;
  const lines = text.split('\n');
  lines.forEach((rawLine, i) => {
    const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    const r = grammar.tokenizeLine(line, ruleStack);
    ruleStack = r.ruleStack;
    out.push({
      line: i + 1,
      text: line,
      offset,
      tokens: r.tokens.map((t) => ({
        text: line.slice(t.startIndex, Math.min(t.endIndex, line.length)),
        start: t.startIndex,
        end: Math.min(t.endIndex, line.length),
        scopes: t.scopes,
      })).filter((t) => t.end > t.start),
    });
    offset += rawLine.length + 1;
  });
  return out;
}

// Every *.shard and *.rules file under the given folders (recursive), sorted.
function findSourceFiles(dirs) {
  const found = [];
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && languageForFile(p)) found.push(p);
    }
  };
  dirs.forEach(walk);
  return found.sort();
}

module.exports = { REPO_ROOT, GRAMMAR_DIR, EXTENSION_DIR, LANGUAGES, loadGrammar, languageForFile, tokenize, findSourceFiles };
