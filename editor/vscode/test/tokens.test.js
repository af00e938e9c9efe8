'use strict';
// (b) Scopes of representative tokens, in the real example files and in small
// snippets for syntax the examples do not use yet.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { REPO_ROOT, loadGrammar, languageForFile, tokenize } = require('../lib/textmate');

const cache = new Map();
async function tokensOfFile(relPath) {
  if (!cache.has(relPath)) {
    const file = path.join(REPO_ROOT, relPath);
    const grammar = await loadGrammar(languageForFile(file));
    cache.set(relPath, tokenize(grammar, fs.readFileSync(file, 'utf8')));
  }
  return cache.get(relPath);
}

// The `nth` token whose text is `text` on the first line containing `lineHas`.
function findToken(lines, lineHas, text, nth = 0, name = '') {
  const line = lines.find((l) => l.text.includes(lineHas));
  assert.ok(line, `${name}: no line contains ${JSON.stringify(lineHas)}`);
  const matches = line.tokens.filter((t) => t.text === text);
  assert.ok(matches.length > nth, `${name}:${line.line}: no token ${JSON.stringify(text)} (#${nth}) in ${JSON.stringify(line.text)}; tokens: ${line.tokens.map((t) => JSON.stringify(t.text)).join(' ')}`);
  return { ...matches[nth], line: line.line };
}

function assertScope(tok, scope, where) {
  const ok = tok.scopes.some((s) => s === scope || s.startsWith(scope + '.'));
  assert.ok(ok, `${where}:${tok.line} ${JSON.stringify(tok.text)}: expected ${scope}, got ${tok.scopes.join(' ')}`);
}
function assertNoScope(tok, prefix, where) {
  assert.ok(!tok.scopes.some((s) => s.startsWith(prefix)), `${where}:${tok.line} ${JSON.stringify(tok.text)}: unexpected ${prefix}: ${tok.scopes.join(' ')}`);
}

// [file, line containing, token text, occurrence on that line, scope]
const EXPECTED = [
  ['stdlib/nn.shard', 'block DotReluDot', 'block', 0, 'storage.type.block.shard'],
  ['stdlib/nn.shard', 'block DotReluDot', 'DotReluDot', 0, 'entity.name.type.block.shard'],
  ['stdlib/nn.shard', 'block DotReluDot', 'depth', 0, 'variable.parameter.shard'],
  ['stdlib/nn.shard', 'block DotReluDot', 'int', 0, 'support.type.primitive.kind.shard'],
  ['stdlib/nn.shard', 'block Dense(', 'axis', 0, 'support.type.primitive.kind.shard'],
  ['stdlib/nn.shard', 'param W1:', 'param', 0, 'storage.type.param.shard'],
  ['stdlib/nn.shard', 'param W1:', 'W1', 0, 'variable.other.param.shard'],
  ['stdlib/nn.shard', 'param W1:', 'f32', 0, 'support.type.primitive.dtype.shard'],
  ['stdlib/nn.shard', 'param W1:', '[', 0, 'meta.shape.shard'],
  ['stdlib/nn.shard', 'param W1:', 'embed', 0, 'entity.name.tag.axis.logical.shard'],
  ['stdlib/nn.shard', 'param W1:', 'embed', 0, 'meta.shape.shard'],
  ['stdlib/nn.shard', 'param W1:', 'hidden', 0, 'entity.name.tag.axis.logical.shard'],
  ['stdlib/nn.shard', 'param W1:', 'init', 0, 'keyword.other.init.shard'],
  ['stdlib/nn.shard', 'param W1:', 'xavier_normal', 0, 'support.function.builtin.init.shard'],
  ['stdlib/nn.shard', 'param W: f32[in', 'lecun_normal', 0, 'support.function.builtin.init.shard'],
  ['stdlib/nn.shard', 'param b: f32[out]', 'zeros', 0, 'support.function.builtin.init.shard'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', 'forward', 0, 'entity.name.function'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', 'forward', 0, 'storage.type.function'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', 'x', 0, 'variable.parameter.shard'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', '->', 0, 'keyword.operator.arrow.shard'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', 'batch', 1, 'entity.name.tag.axis.logical.shard'],
  ['stdlib/nn.shard', 'forward(x: f32[batch, embed])', '{', 0, 'punctuation.section.braces.begin.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', 'let', 0, 'storage.type.let.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', 'y', 0, 'variable.other.let.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', 'relu', 0, 'support.function.builtin.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', '@', 0, 'keyword.operator.matmul.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', 'W1', 0, 'variable.other.readwrite.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', ':', 0, 'keyword.operator.type.annotation.shard'],
  ['stdlib/nn.shard', 'let y = relu(x @ W1)', 'hidden', 0, 'entity.name.tag.axis.logical.shard'],
  ['stdlib/nn.shard', 'return x @ W + b', 'return', 0, 'keyword.control.return.shard'],
  ['stdlib/nn.shard', 'return x @ W + b', '+', 0, 'keyword.operator.arithmetic.shard'],
  ['stdlib/nn.shard', 'return conv2d(', 'conv2d', 0, 'support.function.builtin.shard'],
  ['stdlib/nn.shard', 'return conv2d(', 'stride', 0, 'variable.parameter.function-call.shard'],
  ['stdlib/nn.shard', 'padding: string = "SAME", height: axis', '"', 0, 'string.quoted.double.shard'],
  ['stdlib/nn.shard', 'padding: string = "SAME", height: axis', 'SAME', 0, 'string.quoted.double.shard'],
  ['stdlib/nn.shard', 'padding: string = "SAME", height: axis', 'string', 0, 'support.type.primitive.kind.shard'],
  ['stdlib/nn.shard', '// The Megatron pair', '//', 0, 'comment.line.double-slash.shard'],
  ['stdlib/nn.shard', 'param w: f32[kh = kernel', 'kernel', 0, 'variable.other.readwrite.shard'],
  ['stdlib/nn.shard', 'let up   = Dense(features, out = mid)', 'Dense', 0, 'entity.name.function.call.shard'],
  ['stdlib/nn.shard', 'let up   = Dense(features, out = mid)', 'out', 0, 'variable.parameter.function-call.shard'],
  ['examples/mlp/mlp.shard', 'import nn', 'import', 0, 'keyword.control.import.shard'],
  ['examples/mlp/mlp.shard', 'import nn', 'nn', 0, 'entity.name.namespace.shard'],
  ['examples/mlp/mlp.shard', 'model MLP', 'model', 0, 'storage.type.model.shard'],
  ['examples/mlp/mlp.shard', 'model MLP', 'MLP', 0, 'entity.name.type.model.shard'],
  ['examples/mlp/mlp.shard', 'input x:', 'input', 0, 'storage.type.input.shard'],
  ['examples/mlp/mlp.shard', 'input x:', 'x', 0, 'variable.other.input.shard'],
  ['examples/mlp/mlp.shard', 'input x:', '1024', 0, 'constant.numeric.integer.shard'],
  ['examples/mlp/mlp.shard', 'let blocks = scan(', 'scan', 0, 'support.function.builtin.shard'],
  ['examples/mlp/mlp.shard', 'let blocks = scan(', 'DotReluDot', 0, 'entity.name.function.call.shard'],
  ['examples/mlp/mlp.shard', 'let blocks = scan(', '//', 0, 'comment.line.double-slash.shard'],
  ['examples/mlp/mlp.shard', 'loss sum(h)', 'loss', 0, 'storage.type'],
  ['examples/mlp/mlp.shard', 'optimizer adam', 'optimizer', 0, 'storage.type'],
  ['examples/mlp/mlp.shard', 'optimizer adam', 'adam', 0, 'support.function.builtin.optimizer.shard'],
  ['examples/mlp/mlp.shard', 'optimizer adam', 'lr', 0, 'variable.parameter.function-call.shard'],
  ['examples/mlp/mlp.shard', 'optimizer adam', '1e-3', 0, 'constant.numeric.float.shard'],
  ['examples/cnn/cnn.shard', 'input label: i32[batch]', 'i32', 0, 'support.type.primitive.dtype.shard'],
  ['examples/cnn/cnn.shard', 'metric accuracy', 'metric', 0, 'storage.type.metric.shard'],
  ['examples/cnn/cnn.shard', 'metric accuracy', 'accuracy', 0, 'variable.other.metric.shard'],
  ['examples/cnn/cnn.shard', 'metric accuracy', '==', 0, 'keyword.operator.comparison.shard'],
  ['test/Training/Inputs/block-terms.shard', 'loss balance =', 'loss', 0, 'storage.type.member.shard'],
  ['test/Training/Inputs/block-terms.shard', 'loss balance =', 'balance', 0, 'variable.other.loss.shard'],
  ['test/Training/Inputs/block-terms.shard', 'metric active =', 'active', 0, 'variable.other.metric.shard'],
  ['examples/cnn/cnn.shard', 'one_hot(label, [classes = 10])', 'classes', 0, 'entity.name.tag.axis.logical.shard'],
  ['examples/cnn/cnn.shard', 'one_hot(label, [classes = 10])', 'one_hot', 0, 'support.function.builtin.shard'],
  ['examples/cnn/cnn.shard', 'flatten(h2, [features])', 'features', 0, 'entity.name.tag.axis.logical.shard'],
  ['examples/mlp/2d.rules', 'mesh (', 'mesh', 0, 'storage.type.mesh.shard-rules'],
  ['examples/mlp/2d.rules', 'mesh (', 'data', 0, 'entity.other.attribute-name.axis.mesh.shard-rules'],
  ['examples/mlp/2d.rules', 'mesh (', 'model', 0, 'entity.other.attribute-name.axis.mesh.shard-rules'],
  ['examples/mlp/2d.rules', 'mesh (', '4', 0, 'constant.numeric.integer.shard-rules'],
  ['examples/mlp/2d.rules', 'rules {', 'rules', 0, 'storage.type.rules.shard-rules'],
  ['examples/mlp/2d.rules', 'batch  -> data', 'batch', 0, 'entity.name.tag.axis.logical.shard-rules'],
  ['examples/mlp/2d.rules', 'batch  -> data', '->', 0, 'keyword.operator.arrow.shard-rules'],
  ['examples/mlp/2d.rules', 'batch  -> data', 'data', 0, 'entity.other.attribute-name.axis.mesh.shard-rules'],
  ['examples/mlp/2d.rules', 'hidden -> model', 'model', 0, 'entity.other.attribute-name.axis.mesh.shard-rules'],
  ['examples/mlp/2d.rules', 'embed  -> none', 'none', 0, 'constant.language.none.shard-rules'],
  ['examples/mlp/tp.rules', 'hidden -> model', '//', 0, 'comment.line.double-slash.shard-rules'],
];

for (const [file, lineHas, text, nth, scope] of EXPECTED) {
  test(`${file}: ${JSON.stringify(text)} in ${JSON.stringify(lineHas)} is ${scope}`, async () => {
    const tok = findToken(await tokensOfFile(file), lineHas, text, nth, file);
    assertScope(tok, scope, file);
  });
}

test('logical axes, mesh axes and identifiers get distinct scopes', async () => {
  const model = await tokensOfFile('stdlib/nn.shard');
  const rules = await tokensOfFile('examples/mlp/2d.rules');
  const axis = findToken(model, 'param W1:', 'embed', 0, 'nn.shard');
  const size = findToken(model, 'param W1:', 'depth', 0, 'nn.shard');
  assertNoScope(size, 'entity.name.tag.axis', 'nn.shard'); // `hidden = depth`: depth is a value, not an axis
  const logical = findToken(rules, 'batch  -> data', 'batch', 0, '2d.rules');
  const mesh = findToken(rules, 'batch  -> data', 'data', 0, '2d.rules');
  assertNoScope(mesh, 'entity.name.tag', '2d.rules');
  assertNoScope(logical, 'entity.other.attribute-name', '2d.rules');
  assert.notStrictEqual(axis.scopes.at(-1), size.scopes.at(-1));
  const modelKw = findToken(rules, 'mesh (', 'model', 0, '2d.rules');
  assertNoScope(modelKw, 'storage.type', '2d.rules'); // `model` is a keyword only in model files
});

// Snippets for syntax the examples do not use (yet).
async function tokenizeSnippet(language, text) {
  return tokenize(await loadGrammar(language), text);
}

const SNIPPETS = [
  ['shard', 'let a = .5 + 2. * 3.25e+2 - 7E2 / 10', [['.5', 'constant.numeric.float.shard'], ['2.', 'constant.numeric.float.shard'], ['3.25e+2', 'constant.numeric.float.shard'], ['7E2', 'constant.numeric.float.shard'], ['10', 'constant.numeric.integer.shard'], ['-', 'keyword.operator.arithmetic.shard'], ['/', 'keyword.operator.arithmetic.shard']]],
  ['shard', 'let s = "tab\\t \\"q\\"" /* block */ // line', [['\\t', 'constant.character.escape.shard'], ['\\"', 'constant.character.escape.shard'], ['/*', 'comment.block.shard'], [' block ', 'comment.block.shard'], ['//', 'comment.line.double-slash.shard']]],
  ['shard', 'let b = x != y : [a, b = n + 1]', [['!=', 'keyword.operator.comparison.shard'], ['a', 'entity.name.tag.axis.logical.shard'], ['n', 'variable.other.readwrite.shard']]],
  ['shard', 'block C(flag: bool = true) { param m: bool[k] init constant(value = 0.5) }', [['true', 'constant.language.boolean.shard'], ['bool', 'support.type.primitive.kind.shard'], ['constant', 'support.function.builtin.init.shard'], ['value', 'variable.parameter.function-call.shard']]],
  ['shard', 'import a.b', [['a', 'entity.name.namespace.shard'], ['.', 'punctuation.separator.namespace.shard'], ['b', 'entity.name.namespace.shard']]],
  ['shard', 'let z = a $ b', [['$', 'invalid.illegal.character.shard']]],
  ['shard-rules', 'override "layers.*.W2" : [none, model, (data, model)]', [['override', 'storage.type.override.shard-rules'], ['layers.*.W2', 'string.quoted.double.shard-rules'], ['none', 'constant.language.none.shard-rules'], ['model', 'entity.other.attribute-name.axis.mesh.shard-rules'], ['data', 'entity.other.attribute-name.axis.mesh.shard-rules'], [':', 'keyword.operator'], ['[', 'punctuation.definition.shape.begin.shard-rules']]],
  ['shard-rules', 'rules { embed -> (data, model) layer->none }', [['embed', 'entity.name.tag.axis.logical.shard-rules'], ['data', 'entity.other.attribute-name.axis.mesh.shard-rules'], ['layer', 'entity.name.tag.axis.logical.shard-rules'], ['none', 'constant.language.none.shard-rules']]],
  ['shard-rules', '/* multi\nline */ mesh (data = 8)', [['line ', 'comment.block.shard-rules'], ['data', 'entity.other.attribute-name.axis.mesh.shard-rules']]],
];

for (const [language, text, expectations] of SNIPPETS) {
  test(`${language} snippet ${JSON.stringify(text)}`, async () => {
    const lines = await tokenizeSnippet(language, text);
    const all = lines.flatMap((l) => l.tokens.map((t) => ({ ...t, line: l.line })));
    for (const [tokText, scope] of expectations) {
      const tok = all.find((t) => t.text === tokText);
      assert.ok(tok, `no token ${JSON.stringify(tokText)}; tokens: ${all.map((t) => JSON.stringify(t.text)).join(' ')}`);
      assertScope(tok, scope, 'snippet');
    }
  });
}

// Constructs split over lines and nested, which the examples barely use:
// test/fixtures/multiline.{shard,rules}. [line, column, text, scope]
const { checkSource } = require('../lib/completeness');
const FIXTURES = {
  'multiline.shard': [
    [6, 17, 'k', 'entity.name.tag.axis.logical.shard'],
    [6, 21, 'n', 'variable.other.readwrite.shard'], // a size, not an axis
    [6, 32, 'sum', 'support.function.builtin.shard'],
    [6, 47, 'p', 'entity.name.tag.axis.logical.shard'], // shape inside a size
    [7, 25, 'l', 'entity.name.tag.axis.logical.shard'], // after a comment, on the next line
    [7, 49, '2.', 'constant.numeric.float.shard'],
    [3, 46, '.5e-2', 'constant.numeric.float.shard'],
    [4, 3, 'on', 'variable.parameter.shard'], // config list over several lines
    [9, 7, 'batch', 'entity.name.tag.axis.logical.shard'], // shape over several lines
    [10, 15, '->', 'keyword.operator.arrow.shard'],
    [11, 14, 'x', 'variable.other.readwrite.shard'],
    [17, 8, 'mean', 'support.function.builtin.shard'],
    [19, 13, 'momentum', 'support.function.builtin.optimizer.shard'],
    [19, 39, '9E-1', 'constant.numeric.float.shard'],
  ],
  'multiline.rules': [
    [1, 14, 'mesh', 'storage.type.mesh.shard-rules'],
    [2, 3, 'model', 'entity.other.attribute-name.axis.mesh.shard-rules'],
    [5, 13, 'model', 'entity.other.attribute-name.axis.mesh.shard-rules'],
    [7, 5, 'none', 'constant.language.none.shard-rules'],
    [8, 3, 'hidden', 'entity.name.tag.axis.logical.shard-rules'],
    [9, 5, '->', 'keyword.operator.arrow.shard-rules'],
    [9, 8, 'model', 'entity.other.attribute-name.axis.mesh.shard-rules'],
    [12, 5, 'data', 'entity.other.attribute-name.axis.mesh.shard-rules'],
    [12, 19, 'model', 'entity.other.attribute-name.axis.mesh.shard-rules'],
    [13, 1, 'override', 'storage.type.override.shard-rules'],
  ],
};

for (const [name, expectations] of Object.entries(FIXTURES)) {
  test(`fixture ${name}: complete, and multi-line constructs keep their scopes`, async () => {
    const file = path.join(__dirname, 'fixtures', name);
    const language = languageForFile(file);
    const grammar = await loadGrammar(language);
    const text = fs.readFileSync(file, 'utf8');
    const problems = checkSource(grammar, language, text, name);
    assert.deepStrictEqual(problems, [], problems.join('\n'));
    const lines = tokenize(grammar, text);
    for (const [line, col, text, scope] of expectations) {
      const tok = lines[line - 1].tokens.find((t) => t.start === col - 1);
      assert.ok(tok && tok.text === text, `${name}:${line}:${col}: expected token ${JSON.stringify(text)}, got ${tok && JSON.stringify(tok.text)}`);
      assertScope({ ...tok, line }, scope, name);
    }
  });
}
