'use strict';
// A small re-implementation of the ANTLR lexer (grammar/ShardLexerCommon.g4
// plus the literals of the importing grammar), independent of the TextMate
// grammars, so the tests can check that grammar tokens line up with the real
// tokens of a file.
const { g4Literals } = require('./vocabulary');
const { LANGUAGES, GRAMMAR_DIR } = require('./textmate');
const path = require('path');

const WORD = /^[A-Za-z_][A-Za-z_0-9]*$/;

function makeLexer(language) {
  const keywords = new Set();
  const symbols = new Set();
  for (const g4 of LANGUAGES[language].g4) {
    for (const lit of g4Literals(path.join(GRAMMAR_DIR, g4))) {
      if (!lit.parser) continue;
      (WORD.test(lit.literal) ? keywords : symbols).add(lit.literal);
    }
  }
  // Longest symbol first, as ANTLR picks the longest match.
  const symbolAlt = [...symbols].sort((a, b) => b.length - a.length)
    .map((s) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|');
  const rules = [
    ['ws', /[ \t\r\n\f]+/y],
    ['comment', /\/\/[^\r\n]*/y],
    ['comment', /\/\*[\s\S]*?\*\//y],
    ['string', /"(?:[^"\\\r\n]|\\.)*"/y],
    ['number', /[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/y],
    ['number', /[0-9]+/y],
    ['word', /[A-Za-z_][A-Za-z_0-9]*/y],
    ['symbol', new RegExp(symbolAlt || '(?!)', 'y')],
  ];
  // Returns [{ kind, text, start, end }] with kind one of comment, string,
  // number, keyword, ident, symbol, error (whitespace is dropped).
  return function lex(text) {
    const out = [];
    let pos = 0;
    while (pos < text.length) {
      let best = null;
      for (const [kind, re] of rules) {
        re.lastIndex = pos;
        const m = re.exec(text);
        if (m && m[0].length > 0 && (!best || m[0].length > best.text.length)) best = { kind, text: m[0] };
      }
      if (!best) best = { kind: 'error', text: text[pos] };
      if (best.kind === 'word') best.kind = keywords.has(best.text) ? 'keyword' : 'ident';
      if (best.kind !== 'ws') out.push({ ...best, start: pos, end: pos + best.text.length });
      pos += best.text.length;
    }
    return out;
  };
}

module.exports = { makeLexer };
