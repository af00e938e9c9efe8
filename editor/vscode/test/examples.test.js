'use strict';
// (a) Tokenize every *.shard and *.rules file under examples/ and stdlib/
// (found by a recursive walk, so new files are checked too): no invalid
// scopes, a meaningful scope on every non-blank, non-comment character, and
// every keyword, identifier, number and operator of the real lexer highlighted
// as its kind (see lib/completeness.js).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { REPO_ROOT, loadGrammar, languageForFile, findSourceFiles } = require('../lib/textmate');
const { checkSource } = require('../lib/completeness');

const FILES = findSourceFiles(['examples', 'stdlib'].map((d) => path.join(REPO_ROOT, d)));
const rel = (f) => path.relative(REPO_ROOT, f);

test('examples/ and stdlib/ hold both kinds of source file', () => {
  assert.ok(FILES.some((f) => f.endsWith('.shard')), 'no *.shard file found');
  assert.ok(FILES.some((f) => f.endsWith('.rules')), 'no *.rules file found');
  assert.ok(FILES.some((f) => rel(f).startsWith('stdlib')), 'nothing found under stdlib/');
});

for (const file of FILES) {
  test(`highlights all of ${rel(file)}`, async () => {
    const language = languageForFile(file);
    const grammar = await loadGrammar(language);
    const problems = checkSource(grammar, language, fs.readFileSync(file, 'utf8'), rel(file));
    assert.deepStrictEqual(problems, [], `${problems.length} problem(s):\n${problems.join('\n')}`);
  });
}

// The check above must be able to fail.
test('the completeness check reports bad input', async () => {
  const grammar = await loadGrammar('shard');
  const problems = checkSource(grammar, 'shard', 'model M {\n  let x = a $ b\n}\n', 'bad.shard');
  assert.ok(problems.some((p) => p.includes('bad.shard:2:13') && p.includes('invalid')), problems.join('\n'));
  const rulesGrammar = await loadGrammar('shard-rules');
  // In a rules file `model` is an identifier (a mesh axis), not a keyword;
  // checking that text with the model grammar must complain about it.
  const text = 'mesh (data = 2, model = 4)\nrules {\n  hidden -> model\n}\n';
  assert.deepStrictEqual(checkSource(rulesGrammar, 'shard-rules', text, 'ok.rules'), []);
  const wrong = checkSource(grammar, 'shard-rules', text, 'wrong.rules');
  assert.ok(wrong.some((p) => p.includes('"model"') && p.includes('identifier scoped like a keyword')), wrong.join('\n'));
});
