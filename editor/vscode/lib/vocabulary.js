'use strict';
// The vocabulary the grammars must highlight, read from the single sources of
// truth: the literals of grammar/*.g4 and the names in Builtins.def. Also a
// checker that tokenizes small generated lines containing each word and
// reports every word that does not get the right kind of scope.
const fs = require('fs');
const path = require('path');
const { REPO_ROOT, GRAMMAR_DIR, LANGUAGES, tokenize } = require('./textmate');

const BUILTINS_DEF = path.join(REPO_ROOT, 'compiler', 'include', 'shardc', 'Sema', 'Builtins.def');
const WORD = /^[A-Za-z_][A-Za-z_0-9]*$/;

// ---- .g4 parsing -----------------------------------------------------------

// Replace // and /* */ comments by spaces, leaving quoted literals alone.
function stripG4Comments(text) {
  return text.replace(/'(?:[^'\\\n]|\\.)*'|\/\/[^\n]*|\/\*[\s\S]*?\*\//g,
    (m) => (m[0] === "'" ? m : m.replace(/[^\n]/g, ' ')));
}

function unquote(lit) {
  return lit.slice(1, -1).replace(/\\(.)/g, '$1');
}

// Literals of one .g4 file: [{ literal, rule, label, parser }] where `rule` is
// the rule it appears in, `label` the `# label` of its alternative (if any) and
// `parser` whether the rule is a parser rule (lower-case name).
function g4Literals(file) {
  const text = stripG4Comments(fs.readFileSync(file, 'utf8'));
  const out = [];
  const ruleRe = /(?:^|\n)[ \t]*(?:fragment[ \t]+)?([A-Za-z_][A-Za-z_0-9]*)\s*:((?:'(?:[^'\\\n]|\\.)*'|[^;'])*);/g;
  for (const m of text.matchAll(ruleRe)) {
    const [, rule, body] = m;
    if (/^(?:grammar|lexer|parser|import|options)$/.test(rule)) continue;
    for (const line of body.split('\n')) {
      const label = (/#\s*([A-Za-z_][A-Za-z_0-9]*)\s*$/.exec(line) || [])[1] || null;
      for (const q of line.matchAll(/'(?:[^'\\\n]|\\.)*'/g)) {
        out.push({ literal: unquote(q[0]), rule, label, parser: /^[a-z]/.test(rule) });
      }
    }
  }
  return out;
}

// What kind of scope a literal must get. Types and constants are told apart by
// the g4 rule (or labelled alternative) they appear in; every other word is a
// keyword; symbols are operators or punctuation.
const TYPE_RULES = new Set(['dtype', 'scalarKind']);
const CONSTANT_RULES = new Set(['meshTarget']);
const CONSTANT_LABELS = new Set(['boolExpr']);

const KINDS = {
  keyword: { describe: 'keyword.* or storage.type.*', test: (s) => /^(?:keyword|storage\.type)\./.test(s) },
  type: { describe: 'support.type.* or storage.type.*', test: (s) => /^(?:support\.type|storage\.type)\./.test(s) },
  constant: { describe: 'constant.language.*', test: (s) => /^constant\.language\./.test(s) },
  symbol: { describe: 'keyword.operator.* or punctuation.*', test: (s) => /^(?:keyword\.operator|punctuation)\./.test(s) },
  op: { describe: 'support.function.builtin.*', test: (s) => /^support\.function\.builtin\./.test(s) && !/^support\.function\.builtin\.(?:init|optimizer)\./.test(s) },
  init: { describe: 'support.function.builtin.init.*', test: (s) => /^support\.function\.builtin\.init\./.test(s) },
  optimizer: { describe: 'support.function.builtin.optimizer.*', test: (s) => /^support\.function\.builtin\.optimizer\./.test(s) },
};

function literalKind({ literal, rule, label }) {
  if (!WORD.test(literal)) return 'symbol';
  if (TYPE_RULES.has(rule)) return 'type';
  if (CONSTANT_RULES.has(rule) || CONSTANT_LABELS.has(label)) return 'constant';
  return 'keyword';
}

// Builtins.def: [{ name, kind: 'op' | 'init' | 'optimizer' }]
function builtins(file = BUILTINS_DEF) {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/^[ \t]*SHARDC_(OP|INIT|OPTIMIZER)\(\s*([A-Za-z_][A-Za-z_0-9]*)/gm)]
    .map((m) => ({ name: m[2], kind: m[1].toLowerCase() }));
}

// Everything the grammar of `language` must highlight: [{ word, kind, source }].
// Words only (word-like literals and builtins) unless `symbols` is set.
function vocabulary(language, { symbols = true } = {}) {
  const seen = new Map();
  const add = (word, kind, source) => {
    const prev = seen.get(word);
    // A word used both as a type and as a keyword elsewhere: the type wins.
    if (!prev || (prev.kind === 'keyword' && kind !== 'keyword')) seen.set(word, { word, kind, source });
  };
  for (const g4 of LANGUAGES[language].g4) {
    for (const lit of g4Literals(path.join(GRAMMAR_DIR, g4))) {
      const kind = literalKind(lit);
      if (kind === 'symbol' && (!symbols || !lit.parser)) continue;
      add(lit.literal, kind, `${g4} (rule ${lit.rule})`);
    }
  }
  if (language === 'shard') for (const b of builtins()) add(b.name, b.kind, 'Builtins.def');
  return [...seen.values()];
}

// Keywords (reserved words) of a language: the word-like literals of its g4.
function reservedWords(language) {
  const words = new Map();
  for (const g4 of LANGUAGES[language].g4) {
    for (const lit of g4Literals(path.join(GRAMMAR_DIR, g4))) {
      if (WORD.test(lit.literal)) words.set(lit.literal, literalKind(lit));
    }
  }
  return words;
}

// Lines that place `W` in different syntactic contexts of each language.
const CONTEXTS = {
  shard: {
    keyword: ['W', 'let v = f(W)', 'input x: f32[W]', 'return a W b'],
    type: ['W', 'block B(c: W) {', 'param p: W[a] init zeros', 'let v = f(W)', 'input x: f32[W]'],
    constant: ['W', 'let v = f(W)', 'metric m = a == W'],
    symbol: ['a W b', 'W'],
    op: ['W', 'let y = W(x)', 'return W(x @ w, over = [a])', 'loss mean(W(x))'],
    init: ['W', 'param w: f32[a, b] init W', 'param w: f32[a] init W(value = 0.5)'],
    optimizer: ['W', 'optimizer W(lr = 1e-3)'],
  },
  'shard-rules': {
    keyword: ['W', 'rules { a -> W }', 'mesh (W = 1)', 'override "p" : [W]'],
    type: ['W'],
    constant: ['W', 'rules { a -> W }', 'override "p" : [W, x]', 'rules { a -> (x, W) }'],
    symbol: ['a W b', 'W'],
  },
};

// Tokenize each context with the word substituted for W and return one failure
// message per word that is missing its expected scope in some context.
function checkVocabulary(grammar, language, words) {
  const failures = [];
  for (const { word, kind, source } of words) {
    const expected = KINDS[kind];
    const contexts = (CONTEXTS[language] && CONTEXTS[language][kind]) || ['W'];
    for (const ctx of contexts) {
      const col = ctx.indexOf('W');
      const line = ctx.slice(0, col) + word + ctx.slice(col + 1);
      const [{ tokens }] = tokenize(grammar, line);
      const tok = tokens.find((t) => t.start === col);
      const ok = tok && tok.end === col + word.length && tok.scopes.some((s) => expected.test(s));
      if (!ok) {
        const got = tok ? `token ${JSON.stringify(tok.text)} with scopes ${tok.scopes.join(' ')}` : 'no token starting there';
        failures.push(`"${word}" (${kind}, from ${source}) is not highlighted as ${expected.describe} in ${JSON.stringify(line)}: got ${got}`);
        break;
      }
    }
  }
  return failures;
}

module.exports = { BUILTINS_DEF, KINDS, g4Literals, literalKind, builtins, vocabulary, reservedWords, checkVocabulary, CONTEXTS };
