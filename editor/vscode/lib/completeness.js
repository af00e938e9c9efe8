'use strict';
// Check that a grammar highlights a whole source text: no invalid scopes,
// a meaningful scope on every non-blank character, and grammar tokens that
// line up with the real lexer's tokens and get the right kind of scope.
const { tokenize } = require('./textmate');
const { KINDS, reservedWords } = require('./vocabulary');
const { makeLexer } = require('./lexer');

// Scopes that say what a token is; meta.* and the root scope alone do not.
const MEANINGFUL = /^(?:keyword|storage|entity|variable|support|constant|string|comment|punctuation)\./;
const IDENT_SCOPE = /^(?:entity|variable|support\.function)\./;
const KEYWORD_LIKE = /^(?:keyword|storage|constant\.language|support\.type)\./;

// Flatten per-line tokens into tokens with absolute offsets.
function absoluteTokens(lines) {
  const out = [];
  for (const l of lines) {
    for (const t of l.tokens) out.push({ ...t, line: l.line, col: t.start + 1, start: l.offset + t.start, end: l.offset + t.end });
  }
  return out;
}

function lineCol(text, offset) {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `${line}:${offset - before.lastIndexOf('\n')}`;
}

// Returns a list of problems (strings), empty when all is well.
function checkSource(grammar, language, text, name) {
  const tokens = absoluteTokens(tokenize(grammar, text));
  const problems = [];

  for (const t of tokens) {
    const where = `${name}:${t.line}:${t.col} ${JSON.stringify(t.text)}`;
    if (t.scopes.some((s) => s.startsWith('invalid'))) problems.push(`${where} is invalid: ${t.scopes.join(' ')}`);
    const leaf = t.scopes[t.scopes.length - 1];
    if (t.text.trim() !== '' && !MEANINGFUL.test(leaf)) problems.push(`${where} has no meaningful scope: ${t.scopes.join(' ')}`);
  }

  const reserved = reservedWords(language);
  const byStart = new Map(tokens.map((t) => [t.start, t]));
  for (const lt of makeLexer(language)(text)) {
    const loc = `${name}:${lineCol(text, lt.start)} ${lt.kind} ${JSON.stringify(lt.text.slice(0, 40))}`;
    const cover = tokens.filter((t) => t.start < lt.end && t.end > lt.start);
    if (lt.kind === 'error') {
      problems.push(`${loc}: the lexer rejects this character`);
    } else if (lt.kind === 'comment' || lt.kind === 'string') {
      const want = lt.kind === 'comment' ? 'comment.' : 'string.quoted.double.';
      if (!cover.every((t) => t.scopes.some((s) => s.startsWith(want)))) problems.push(`${loc}: not all scoped as ${want}*`);
    } else {
      const t = byStart.get(lt.start);
      if (!t || t.end !== lt.end) {
        problems.push(`${loc}: grammar token boundaries differ (${cover.map((c) => JSON.stringify(c.text)).join(', ')})`);
        continue;
      }
      const has = (re) => t.scopes.some((s) => re.test(s));
      const got = t.scopes.join(' ');
      if (lt.kind === 'keyword') {
        const kind = KINDS[reserved.get(lt.text)];
        if (!t.scopes.some(kind.test)) problems.push(`${loc}: keyword not scoped as ${kind.describe}: ${got}`);
      } else if (lt.kind === 'ident') {
        if (!has(IDENT_SCOPE)) problems.push(`${loc}: identifier not scoped as entity.*, variable.* or support.function.*: ${got}`);
        if (has(KEYWORD_LIKE)) problems.push(`${loc}: identifier scoped like a keyword: ${got}`);
      } else if (lt.kind === 'number') {
        if (!has(/^constant\.numeric\./)) problems.push(`${loc}: number not scoped as constant.numeric.*: ${got}`);
      } else if (lt.kind === 'symbol') {
        if (!t.scopes.some(KINDS.symbol.test)) problems.push(`${loc}: symbol not scoped as ${KINDS.symbol.describe}: ${got}`);
      }
    }
  }
  return problems;
}

module.exports = { checkSource };
