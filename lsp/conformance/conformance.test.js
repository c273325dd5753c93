// Conformance of the soba-lsp binary against an independent client:
// Microsoft's vscode-languageserver-protocol over stdio, the same library
// family the VS Code extension uses. Run with SOBA_LSP=/path/to/soba-lsp.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  InitializeRequest,
  InitializedNotification,
  ShutdownRequest,
  ExitNotification,
  ExecuteCommandRequest,
} = require('vscode-languageserver-protocol/node');

const binary = process.env.SOBA_LSP;

// The command list of PROTOCOL.md, read from the shared folder when it is
// beside the repository, otherwise from the server's one definition of it
// (lsp/protocol/protocol.go, constants in PROTOCOL.md's order).
function protocolCommands() {
  const file = path.resolve(__dirname, '../../../shared/PROTOCOL.md');
  if (fs.existsSync(file)) {
    const text = fs.readFileSync(file, 'utf8');
    return [...text.matchAll(/^\| `(soba\.[a-zA-Z.]+)` \|/gm)].map((m) => m[1]);
  }
  const go = fs.readFileSync(path.resolve(__dirname, '../protocol/protocol.go'), 'utf8');
  return [...go.matchAll(/^\tCommand\w+ += "(soba\.[a-zA-Z.]+)"$/gm)].map((m) => m[1]);
}

test('soba-lsp speaks LSP to vscode-languageserver-protocol', { timeout: 30000 }, async () => {
  assert.ok(binary, 'set SOBA_LSP to the soba-lsp binary');
  const child = spawn(binary, ['--log-level', 'debug'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));

  const conn = createProtocolConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  conn.listen();
  try {
    const init = await conn.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: null,
      clientInfo: { name: 'conformance' },
      capabilities: { window: { workDoneProgress: true } },
    });
    assert.equal(init.serverInfo.name, 'soba-lsp');
    assert.deepEqual(init.capabilities.executeCommandProvider.commands, protocolCommands());
    const sync = init.capabilities.textDocumentSync;
    assert.equal(sync.openClose, true);
    assert.ok(sync.change === 1 || sync.change === 2, `change = ${sync.change}`);
    assert.ok(sync.save === true || typeof sync.save === 'object', `save = ${sync.save}`);
    await conn.sendNotification(InitializedNotification.type, {});

    const budget = await conn.sendRequest(ExecuteCommandRequest.type, { command: 'soba.budget', arguments: [] });
    for (const key of ['effectiveTokens', 'hardLimit', 'softLimit', 'contextWindow', 'maxOutputTokens',
      'safetyReserveTokens', 'source', 'autoCompact', 'pending', 'state', 'lastCompaction']) {
      assert.ok(key in budget, `budget lacks ${key}: ${JSON.stringify(budget)}`);
    }
    assert.ok(Array.isArray(budget.pending));

    await assert.rejects(
      conn.sendRequest(ExecuteCommandRequest.type, { command: 'soba.checkpoint', arguments: [{ kind: 'done', note: 'x' }] }),
      (err) => err.code === -32602 && /kind must be "milestone" or "plan_pivot"/.test(err.message),
    );
    await assert.rejects(
      conn.sendRequest(ExecuteCommandRequest.type, { command: 'soba.nope', arguments: [] }),
      (err) => err.code === -32602 && /soba\.nope/.test(err.message),
    );
    // Still serving after the errors.
    await conn.sendRequest(ExecuteCommandRequest.type, { command: 'soba.budget' });

    await conn.sendRequest(ShutdownRequest.type);
    await conn.sendNotification(ExitNotification.type);
    const code = await exited;
    assert.equal(code, 0, `exit code ${code}; stderr:\n${stderr}`);
  } finally {
    conn.dispose();
    child.kill();
  }
});
