'use strict';
// Highlighting comes from the grammars; folding from a provider that folds
// blocks, models, rules and multi-line lists on their brackets; everything
// else (errors as you type, hover, go to definition, completion, outline) from
// shardc's language server, shardc-lsp, which the client starts on stdio.
const path = require('path');
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');
const { foldingRanges } = require('./folding');

const KINDS = { comment: 'Comment', region: 'Region' };
const SELECTOR = [{ language: 'shard' }, { language: 'shard-rules' }];

let client;

function activate(context) {
  context.subscriptions.push(vscode.languages.registerFoldingRangeProvider(SELECTOR, {
    provideFoldingRanges(document) {
      return foldingRanges(document.getText()).map((r) =>
        new vscode.FoldingRange(r.start, r.end, KINDS[r.kind] && vscode.FoldingRangeKind[KINDS[r.kind]]));
    },
  }));

  const config = vscode.workspace.getConfiguration('shard.server');
  const command = config.get('path') || 'shardc-lsp';
  // shard.rules: model -> rules file, relative to the workspace folder; the server
  // takes absolute paths.
  const folders = vscode.workspace.workspaceFolders;
  const root = folders && folders.length ? folders[0].uri.fsPath : process.cwd();
  const rules = {};
  for (const [model, file] of Object.entries(vscode.workspace.getConfiguration('shard').get('rules') || {}))
    rules[path.resolve(root, model)] = path.resolve(root, file);
  client = new LanguageClient('shardc-lsp', 'shardc language server',
    { command, args: config.get('args') || [] },
    { documentSelector: SELECTOR, initializationOptions: { rules } });
  // Without the server the extension still highlights and folds.
  client.start().catch((error) => {
    vscode.window.showWarningMessage(`shardc-lsp did not start (${command}): ${error.message}. ` +
      'Set shard.server.path to build/bin/shardc-lsp.');
  });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
