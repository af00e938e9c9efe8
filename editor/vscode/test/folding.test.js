'use strict';
// The folding provider of extension.js (folding on braces, brackets, parens,
// block comments and region markers).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { foldingRanges } = require('../folding');
const { REPO_ROOT } = require('../lib/textmate');

test('folds blocks, forward functions and multi-line lists of stdlib/nn.shard', () => {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'stdlib', 'nn.shard'), 'utf8');
  const lines = text.split('\n');
  const ranges = foldingRanges(text);
  const blockLine = lines.findIndex((l) => l.startsWith('block DotReluDot'));
  const block = ranges.find((r) => r.start === blockLine);
  assert.ok(block, 'no range for block DotReluDot');
  assert.strictEqual(lines[block.end + 1].trim(), '}', 'the range should stop before the closing brace');
  assert.ok(ranges.some((r) => r.start > block.start && r.end < block.end && lines[r.start].includes('forward')), 'no nested range for forward');
  for (const r of ranges) assert.ok(r.end > r.start);
  // Ranges must nest or be disjoint.
  for (const a of ranges) for (const b of ranges) {
    if (a === b) continue;
    const disjoint = a.end < b.start || b.end < a.start;
    const nested = (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end);
    assert.ok(disjoint || nested, `overlapping ranges ${JSON.stringify(a)} ${JSON.stringify(b)}`);
  }
});

test('ignores brackets in strings and comments, folds comments and regions', () => {
  const text = [
    'model M {',             // 0
    '  // a } in a comment',  // 1
    '  let s = "a { b"',      // 2
    '  /* block',             // 3
    '     comment ( */',      // 4
    '  // region inputs',     // 5
    '  input x: f32[',        // 6
    '    batch,',             // 7
    '    embed]',             // 8
    '  // endregion',         // 9
    '}',                      // 10
  ].join('\n');
  assert.deepStrictEqual(foldingRanges(text), [
    { start: 0, end: 9, kind: 'brackets' },
    { start: 3, end: 4, kind: 'comment' },
    { start: 5, end: 9, kind: 'region' },
    { start: 6, end: 7, kind: 'brackets' },
  ]);
});

test('rules files fold on their braces', () => {
  const text = 'mesh (data = 8)\nrules {\n  batch -> data\n}\n';
  assert.deepStrictEqual(foldingRanges(text), [{ start: 1, end: 2, kind: 'brackets' }]);
});
