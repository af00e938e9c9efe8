'use strict';
// The extension manifest points at the grammars in grammar/ (copied into
// syntaxes/ at package time) and at a valid language configuration.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { EXTENSION_DIR, LANGUAGES } = require('../lib/textmate');

const pkg = JSON.parse(fs.readFileSync(path.join(EXTENSION_DIR, 'package.json'), 'utf8'));

test('package.json contributes both languages with their grammars', () => {
  for (const [id, lang] of Object.entries(LANGUAGES)) {
    const language = pkg.contributes.languages.find((l) => l.id === id);
    assert.ok(language, `language ${id} not contributed`);
    assert.deepStrictEqual(language.extensions, [lang.extension]);
    assert.ok(fs.existsSync(path.join(EXTENSION_DIR, language.configuration)), `${language.configuration} missing`);
    const grammar = pkg.contributes.grammars.find((g) => g.language === id);
    assert.ok(grammar, `no grammar for ${id}`);
    assert.strictEqual(grammar.scopeName, lang.scopeName);
    // syntaxes/X is the package-time copy of grammar/X.
    assert.strictEqual(path.posix.dirname(grammar.path), './syntaxes');
    assert.strictEqual(path.basename(grammar.path), path.basename(lang.file));
    const raw = JSON.parse(fs.readFileSync(lang.file, 'utf8'));
    assert.strictEqual(raw.scopeName, lang.scopeName, `${lang.file} has scopeName ${raw.scopeName}`);
  }
  assert.ok(pkg.activationEvents.includes('onLanguage:shard'));
  assert.ok(fs.existsSync(path.join(EXTENSION_DIR, pkg.main)), `${pkg.main} missing`);
});

test('language-configuration.json has comments, brackets and pairs', () => {
  const conf = JSON.parse(fs.readFileSync(path.join(EXTENSION_DIR, 'language-configuration.json'), 'utf8'));
  assert.deepStrictEqual(conf.comments, { lineComment: '//', blockComment: ['/*', '*/'] });
  assert.deepStrictEqual(conf.brackets, [['{', '}'], ['[', ']'], ['(', ')']]);
  for (const open of ['{', '[', '(', '"']) {
    assert.ok(conf.autoClosingPairs.some((p) => p.open === open), `no auto-closing ${open}`);
    assert.ok(conf.surroundingPairs.some((p) => p[0] === open), `no surrounding ${open}`);
  }
  for (const re of [conf.folding.markers.start, conf.folding.markers.end, conf.wordPattern,
    conf.indentationRules.increaseIndentPattern, conf.indentationRules.decreaseIndentPattern]) new RegExp(re);
  assert.ok(new RegExp(conf.indentationRules.increaseIndentPattern).test('block Dense(features: int) {'));
  assert.ok(new RegExp(conf.indentationRules.decreaseIndentPattern).test('  }'));
});

test('copied grammars are gitignored but packaged', () => {
  const gitignore = fs.readFileSync(path.join(EXTENSION_DIR, '.gitignore'), 'utf8');
  assert.match(gitignore, /^syntaxes\/$/m);
  assert.match(gitignore, /^node_modules\/$/m);
  assert.match(gitignore, /^\*\.vsix$/m);
  const ignored = fs.readFileSync(path.join(EXTENSION_DIR, '.vscodeignore'), 'utf8')
    .split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  assert.ok(!ignored.some((l) => /syntaxes|\*\*$|^\*$|\.json$/.test(l) && !/^(?:lib|scripts|test)\/\*\*$|package-lock\.json/.test(l)), ignored.join(', '));
  // The language client is a production dependency: packaged from node_modules/.
  assert.ok(!ignored.some((l) => l.startsWith('node_modules')), ignored.join(', '));
  assert.match(pkg.scripts.package, /copy-grammars\.js && vsce package/);
});

test('the extension starts shardc-lsp through vscode-languageclient', () => {
  assert.ok(pkg.dependencies['vscode-languageclient'], 'vscode-languageclient is not a dependency');
  const client = JSON.parse(fs.readFileSync(require.resolve('vscode-languageclient/package.json'), 'utf8'));
  // The client's engine decides the editors it runs in; the manifest says the same.
  assert.strictEqual(pkg.engines.vscode, client.engines.vscode);
  const settings = pkg.contributes.configuration.properties;
  const source = fs.readFileSync(path.join(EXTENSION_DIR, pkg.main), 'utf8');
  assert.strictEqual(settings['shard.server.path'].default, 'shardc-lsp');
  assert.strictEqual(settings['shard.server.args'].type, 'array');
  assert.strictEqual(settings['shard.rules'].type, 'object');
  assert.match(source, /initializationOptions: \{ rules \}/);
  assert.match(source, /require\('vscode-languageclient\/node'\)/);
  assert.match(source, /getConfiguration\('shard\.server'\)/);
  assert.ok(!/--no-dependencies/.test(pkg.scripts.package));
});
