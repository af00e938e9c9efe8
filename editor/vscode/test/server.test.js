'use strict';
// The language server as the extension's client speaks to it: shardc-lsp started
// on stdio, messages framed with Content-Length (vscode-jsonrpc, which
// vscode-languageclient is built on), a model file opened, its diagnostics
// published, a hover answered, shutdown. Needs build/bin/shardc-lsp (or
// SHARDC_LSP): skipped, saying so, before the build.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const rpc = require('vscode-jsonrpc/node');

const REPO = path.resolve(__dirname, '..', '..', '..');
const SERVER = process.env.SHARDC_LSP || path.join(REPO, 'build', 'bin', 'shardc-lsp');

test('shardc-lsp answers a client over Content-Length framing', { skip: !fs.existsSync(SERVER) && `no ${SERVER}: build shardc first` }, async () => {
  const server = spawn(SERVER, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout), new rpc.StreamMessageWriter(server.stdin));
  const published = new Promise((resolve) =>
    connection.onNotification('textDocument/publishDiagnostics', resolve));
  connection.listen();

  const init = await connection.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
  assert.strictEqual(init.capabilities.hoverProvider, true);
  connection.sendNotification('initialized', {});

  const file = path.join(REPO, 'examples', 'mlp', 'mlp.shard');
  const uri = 'file://' + file;
  const text = fs.readFileSync(file, 'utf8');
  connection.sendNotification('textDocument/didOpen',
    { textDocument: { uri, languageId: 'shard', version: 1, text } });
  const diagnostics = await published;
  assert.strictEqual(diagnostics.uri, uri);
  assert.deepStrictEqual(diagnostics.diagnostics, []);

  // The first `x` after `input`: the model's input, with its named shape.
  const lines = text.split('\n');
  const line = lines.findIndex((l) => /^\s*input\s+x\b/.test(l));
  const character = lines[line].indexOf('x');
  const hover = await connection.sendRequest('textDocument/hover',
    { textDocument: { uri }, position: { line, character } });
  assert.match(hover.contents.value, /^`x`: `f32\[batch=\d+, embed=\d+\]`/);

  await connection.sendRequest('shutdown');
  const exited = new Promise((resolve) => server.on('exit', resolve));
  connection.sendNotification('exit');
  assert.strictEqual(await exited, 0);
  connection.dispose();
});
