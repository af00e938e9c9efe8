'use strict';
// Highlighting comes from the grammars alone; the only code is a folding
// provider, so that blocks, models, rules and multi-line lists fold on their
// brackets rather than on indentation.
const vscode = require('vscode');
const { foldingRanges } = require('./folding');

const KINDS = { comment: 'Comment', region: 'Region' };

function activate(context) {
  const selector = [{ language: 'shard' }, { language: 'shard-rules' }];
  context.subscriptions.push(vscode.languages.registerFoldingRangeProvider(selector, {
    provideFoldingRanges(document) {
      return foldingRanges(document.getText()).map((r) =>
        new vscode.FoldingRange(r.start, r.end, KINDS[r.kind] && vscode.FoldingRangeKind[KINDS[r.kind]]));
    },
  }));
}

function deactivate() {}

module.exports = { activate, deactivate };
