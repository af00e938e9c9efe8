'use strict';
// Folding ranges for shard model and rules files: one per multi-line pair of
// braces, brackets or parentheses, per multi-line /* */ comment, and per
// `// region` ... `// endregion` pair. Strings and comments are skipped when
// matching brackets. Pure function, so it can be tested without VS Code.

const OPEN = { '{': '}', '[': ']', '(': ')' };
const CLOSE = { '}': '{', ']': '[', ')': '(' };

// Returns [{ start, end, kind }] with 0-based line numbers; kind is
// 'brackets', 'comment' or 'region'.
function foldingRanges(text) {
  const ranges = [];
  const stack = [];
  const regions = [];
  let line = 0;
  let lineStart = 0;
  const firstOnLine = (pos) => text.slice(lineStart, pos).trim() === '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') { line++; lineStart = i + 1; continue; }
    if (c === '"') {
      // A string ends at the closing quote or at the end of the line.
      for (i++; i < text.length && text[i] !== '"' && text[i] !== '\n'; i++) if (text[i] === '\\') i++;
      if (text[i] === '\n') i--;
      continue;
    }
    if (c === '/' && text[i + 1] === '/') {
      let end = text.indexOf('\n', i);
      if (end < 0) end = text.length;
      const comment = text.slice(i + 2, end);
      if (firstOnLine(i)) {
        if (/^\s*#?region\b/.test(comment)) regions.push(line);
        else if (/^\s*#?endregion\b/.test(comment) && regions.length) {
          const start = regions.pop();
          if (line > start) ranges.push({ start, end: line, kind: 'region' });
        }
      }
      i = end - 1;
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      const startLine = line;
      let end = text.indexOf('*/', i + 2);
      end = end < 0 ? text.length : end + 2;
      for (let j = i; j < end; j++) if (text[j] === '\n') { line++; lineStart = j + 1; }
      if (line > startLine) ranges.push({ start: startLine, end: line, kind: 'comment' });
      i = end - 1;
      continue;
    }
    if (OPEN[c]) {
      stack.push({ char: c, line });
    } else if (CLOSE[c]) {
      // Pop up to the matching opener; unmatched closers are ignored.
      let k = stack.length - 1;
      while (k >= 0 && stack[k].char !== CLOSE[c]) k--;
      if (k < 0) continue;
      const open = stack[k];
      stack.length = k;
      // The closing line stays visible, as in VS Code's own languages.
      const end = line - 1;
      if (end > open.line) ranges.push({ start: open.line, end, kind: 'brackets' });
    }
  }
  return ranges.sort((a, b) => a.start - b.start || b.end - a.end);
}

module.exports = { foldingRanges };
