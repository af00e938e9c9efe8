'use strict';
// (c) Single source of truth: every word-like literal of the .g4 grammars
// (and every operator/punctuation literal of the parser rules) and every
// builtin in Builtins.def must be highlighted with the right kind of scope by
// the matching TextMate grammar. Checked by tokenizing generated lines.
// (d) The check itself must fail when a word is missing from a grammar.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { LANGUAGES, loadGrammar } = require('../lib/textmate');
const { vocabulary, checkVocabulary, builtins, g4Literals } = require('../lib/vocabulary');
const path = require('path');
const { GRAMMAR_DIR } = require('../lib/textmate');

function words(language, filter = () => true) {
  return vocabulary(language).filter(filter);
}

test('the sources of truth are found and not empty', () => {
  const model = words('shard').map((w) => w.word);
  const rules = words('shard-rules').map((w) => w.word);
  for (const w of ['block', 'model', 'param', 'f32', 'int', 'true', 'forward', '@', '->']) assert.ok(model.includes(w), `model vocabulary lacks ${w}`);
  for (const w of ['mesh', 'rules', 'none', 'override', '->']) assert.ok(rules.includes(w), `rules vocabulary lacks ${w}`);
  assert.ok(!rules.includes('model'), '`model` is not a keyword of rules files');
  const b = builtins();
  assert.ok(b.length >= 20, `only ${b.length} builtins found in Builtins.def`);
  for (const kind of ['op', 'init', 'optimizer']) assert.ok(b.some((x) => x.kind === kind), `no ${kind} in Builtins.def`);
  assert.ok(!b.some((x) => x.name === 'NAME'), 'the #define placeholders must not count as builtins');
});

for (const language of Object.keys(LANGUAGES)) {
  test(`${LANGUAGES[language].scopeName} highlights every keyword, type and constant of its .g4`, async () => {
    const grammar = await loadGrammar(language);
    const failures = checkVocabulary(grammar, language, words(language, (w) => /^(?:keyword|type|constant)$/.test(w.kind)));
    assert.deepStrictEqual(failures, [], failures.join('\n'));
  });
  test(`${LANGUAGES[language].scopeName} highlights every operator and punctuation literal of its .g4`, async () => {
    const grammar = await loadGrammar(language);
    const failures = checkVocabulary(grammar, language, words(language, (w) => w.kind === 'symbol'));
    assert.deepStrictEqual(failures, [], failures.join('\n'));
  });
}

test('source.shard highlights every builtin of Builtins.def with its kind', async () => {
  const grammar = await loadGrammar('shard');
  const failures = checkVocabulary(grammar, 'shard', words('shard', (w) => /^(?:op|init|optimizer)$/.test(w.kind)));
  assert.deepStrictEqual(failures, [], failures.join('\n'));
});

// ---- (d) the check above can fail ------------------------------------------

// A copy of a grammar in which `word` no longer matches anywhere.
function withoutWord(language, word) {
  const raw = JSON.parse(fs.readFileSync(LANGUAGES[language].file, 'utf8'));
  const re = new RegExp(`(?:(?<![A-Za-z0-9_])|(?<=\\\\b))${word}(?![A-Za-z0-9_])`, 'g');
  let replaced = 0;
  const walk = (node) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const key of Object.keys(node)) {
      if (['match', 'begin', 'end'].includes(key) && typeof node[key] === 'string') {
        node[key] = node[key].replace(re, () => { replaced++; return `${word}_removed`; });
      } else walk(node[key]);
    }
  };
  walk(raw);
  assert.ok(replaced > 0, `${word} does not occur in ${LANGUAGES[language].file}`);
  return raw;
}

for (const [language, word] of [['shard', 'loss'], ['shard', 'f32'], ['shard', 'true'], ['shard', 'xavier_normal'], ['shard', 'adam'], ['shard', 'matmul'], ['shard-rules', 'none'], ['shard-rules', 'override']]) {
  test(`the check reports "${word}" when it is removed from ${LANGUAGES[language].scopeName}`, async () => {
    const grammar = await loadGrammar(language, withoutWord(language, word));
    const failures = checkVocabulary(grammar, language, vocabulary(language));
    assert.ok(failures.length > 0, `removing ${word} went unnoticed`);
    assert.ok(failures.some((f) => f.startsWith(`"${word}"`)), `no failure names ${word}:\n${failures.join('\n')}`);
    assert.ok(failures.every((f) => f.startsWith(`"${word}"`)), `other words fail too:\n${failures.join('\n')}`);
  });
}

test('the check reports a keyword added to a .g4 but not to the grammar', async () => {
  const grammar = await loadGrammar('shard');
  const failures = checkVocabulary(grammar, 'shard', [{ word: 'frobnicate', kind: 'keyword', source: 'test' }]);
  assert.strictEqual(failures.length, 1);
  assert.match(failures[0], /^"frobnicate" \(keyword, from test\) is not highlighted as keyword/);
});

test('the check reports a builtin highlighted with the wrong kind', async () => {
  const grammar = await loadGrammar('shard');
  // xavier_normal is an initialiser, so claiming it is an optimizer must fail.
  const failures = checkVocabulary(grammar, 'shard', [{ word: 'xavier_normal', kind: 'optimizer', source: 'test' }]);
  assert.strictEqual(failures.length, 1, failures.join('\n'));
});

test('g4 literal extraction keeps comments and quoted comment markers apart', () => {
  const lits = g4Literals(path.join(GRAMMAR_DIR, 'ShardLexerCommon.g4')).map((l) => l.literal);
  assert.ok(lits.includes('//') && lits.includes('/*') && lits.includes('*/'), lits.join(' '));
  const model = g4Literals(path.join(GRAMMAR_DIR, 'ShardModel.g4'));
  // `// nn -> nn.shard` is a comment in ShardModel.g4; its words are not literals.
  assert.ok(!model.some((l) => l.literal === 'nn'), 'comment text taken for a literal');
  assert.ok(model.some((l) => l.literal === 'true' && l.label === 'boolExpr'));
});

test('the grammar lists no builtin that Builtins.def lacks (npm run sync-builtins)', () => {
  const { spawnSync } = require('child_process');
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'scripts', 'sync-builtins.js'), '--check'], { encoding: 'utf8' });
  assert.strictEqual(r.status, 0, r.stderr + r.stdout);
});
