// `soba-lsp acp` and a client that offers its file system and terminal
// (fs.readTextFile, fs.writeTextFile, terminal), driven by the official ACP
// TypeScript SDK; then the smaller methods: PromptResponse.usage,
// $/cancel_request, session/list without cwd, session/delete. Run by
// conformance_test.go (TestACPEditorDelegationWithOfficialClient), which
// starts the fake model server, writes the workspace and checks afterwards
// what the model read: SOBA_LSP is the binary, SOBA_WORKSPACE the workspace.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import fs from 'node:fs';
import path from 'node:path';
import * as acp from '@agentclientprotocol/sdk/unstable';

const binary = process.env.SOBA_LSP;
const cwd = process.env.SOBA_WORKSPACE;

async function until(cond, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a client that offers fs and terminal sees the agent use them', { timeout: 90000 }, async () => {
  assert.ok(binary && cwd, 'set SOBA_LSP and SOBA_WORKSPACE');
  // Started in the workspace, as an editor starts its agent: session/list
  // without cwd finds its sessions.
  const child = spawn(binary, ['acp'], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));

  const updates = [];
  const calls = []; // every fs/* and terminal/* request, in order
  const permissions = []; // every session/request_permission's params
  // The editor's unsaved buffer of a.txt differs from the disk.
  const buffers = { [path.join(cwd, 'a.txt')]: 'unsaved buffer text\n' };
  const terminals = {};
  let nextTerminal = 1;
  const app = acp.client()
    .onRequest('session/request_permission', async ({ params }) => {
      permissions.push(params);
      return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
    })
    .onNotification('session/update', ({ params }) => { updates.push(params); })
    .onRequest('fs/read_text_file', async ({ params }) => {
      calls.push(['fs/read_text_file', params]);
      const text = buffers[params.path] ?? fs.readFileSync(params.path, 'utf8');
      return { content: text };
    })
    .onRequest('fs/write_text_file', async ({ params }) => {
      calls.push(['fs/write_text_file', params]);
      buffers[params.path] = params.content; // an unsaved buffer: the disk is not written
      return {};
    })
    .onRequest('terminal/create', async ({ params }) => {
      calls.push(['terminal/create', params]);
      const id = `term-${nextTerminal++}`;
      const command = params.args.at(-1);
      let resolveExit;
      const exit = new Promise((r) => { resolveExit = r; });
      terminals[id] = { command, exit, resolveExit, output: '' };
      // A command that finishes: "echo hi; exit 3" prints and exits 3. A
      // sleep runs until it is killed.
      if (!command.startsWith('sleep')) {
        terminals[id].output = 'hi\n';
        resolveExit({ exitCode: 3, signal: null });
      }
      return { terminalId: id };
    })
    .onRequest('terminal/wait_for_exit', async ({ params }) => {
      calls.push(['terminal/wait_for_exit', params]);
      return terminals[params.terminalId].exit;
    })
    .onRequest('terminal/output', async ({ params }) => {
      calls.push(['terminal/output', params]);
      const t = terminals[params.terminalId];
      return { output: t.output, truncated: false };
    })
    .onRequest('terminal/kill', async ({ params }) => {
      calls.push(['terminal/kill', params]);
      const t = terminals[params.terminalId];
      t.output = 'killed\n';
      t.resolveExit({ exitCode: null, signal: 'SIGKILL' });
      return {};
    })
    .onRequest('terminal/release', async ({ params }) => {
      calls.push(['terminal/release', params]);
      return {};
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    await app.connectWith(stream, async (cx) => {
      const init = await cx.request('initialize', {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, session: { configOptions: { boolean: {} } } },
      });
      assert.deepEqual(init.agentCapabilities.sessionCapabilities.delete, {}, 'session/delete is announced');
      assert.ok(init.authMethods.length >= 1, 'at least one auth method (the ACP registry lists only such agents)');
      assert.equal(init.authMethods[0].id, 'soba-config');
      await cx.request('authenticate', { methodId: 'soba-config' });

      const created = await cx.request('session/new', { cwd, mcpServers: [] });
      const { sessionId } = created;
      // The session's settings: auto-compaction (a toggle: this client
      // offers boolean options) and the approval policy, also as modes.
      const option = (opts, id) => opts.find((o) => o.id === id);
      assert.deepEqual(option(created.configOptions, 'auto_compaction')?.type, 'boolean', JSON.stringify(created.configOptions));
      assert.equal(option(created.configOptions, 'auto_compaction').currentValue, true);
      const approval = option(created.configOptions, 'approval');
      assert.deepEqual([approval?.type, approval?.category, approval?.currentValue], ['select', 'mode', 'ask']);
      assert.deepEqual(approval.options.map((o) => o.value), ['ask', 'auto']);
      assert.equal(created.modes?.currentModeId, 'ask');
      assert.deepEqual(created.modes.availableModes.map((m) => m.id), ['ask', 'auto']);

      // One turn: read_file, write_file and bash, each through the editor.
      const r1 = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'use the editor' }] });
      assert.equal(r1.stopReason, 'end_turn');
      const read = calls.find(([m]) => m === 'fs/read_text_file');
      assert.equal(read?.[1].path, path.join(cwd, 'a.txt'), JSON.stringify(calls));
      assert.equal(read[1].sessionId, sessionId);
      const write = calls.find(([m]) => m === 'fs/write_text_file');
      assert.deepEqual([write?.[1].path, write?.[1].content], [path.join(cwd, 'sub', 'b.txt'), 'from the agent\n']);
      assert.ok(!fs.existsSync(path.join(cwd, 'sub', 'b.txt')), 'the agent wrote the disk itself');
      // The edit of a.txt: its permission shows the change to the editor's
      // unsaved buffer (what the tool changes), not to the disk's text.
      const editPerm = permissions.find((p) => p.toolCall.toolCallId === 'e2b');
      const editDiff = editPerm?.toolCall.content?.find((c) => c.type === 'diff');
      assert.deepEqual([editDiff?.path, editDiff?.oldText, editDiff?.newText], [path.join(cwd, 'a.txt'), 'unsaved buffer text\n', 'edited buffer text\n'],
        JSON.stringify(editPerm));
      const edit = calls.filter(([m]) => m === 'fs/write_text_file').find(([, p]) => p.path === path.join(cwd, 'a.txt'));
      assert.equal(edit?.[1].content, 'edited buffer text\n', 'the edit went through the editor');
      assert.equal(fs.readFileSync(path.join(cwd, 'a.txt'), 'utf8'), 'text on disk\n', 'the disk is untouched');
      const create = calls.find(([m]) => m === 'terminal/create')[1];
      assert.equal(create.command, 'bash');
      assert.deepEqual(create.args, ['-o', 'pipefail', '-c', 'echo hi; exit 3']);
      assert.equal(create.cwd, cwd);
      assert.equal(create.outputByteLimit, 65536);
      const order = calls.filter(([m]) => m.startsWith('terminal/')).map(([m, p]) => `${m} ${p.terminalId ?? ''}`.trim());
      assert.deepEqual(order, ['terminal/create', 'terminal/wait_for_exit term-1', 'terminal/output term-1', 'terminal/release term-1']);
      const shown = updates.find((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.toolCallId === 'e3'
        && (u.update.content ?? []).some((c) => c.type === 'terminal'));
      assert.equal(shown?.update.content.find((c) => c.type === 'terminal').terminalId, 'term-1', 'the tool call shows the terminal');
      const result = updates.filter((u) => u.update.sessionUpdate === 'tool_call_update' && u.update.toolCallId === 'e3').at(-1);
      assert.equal(result.update.status, 'failed', 'exit 3 fails the call');
      // PromptResponse.usage: the sum over the turn's model requests (the edit's reported zero).
      assert.deepEqual(r1.usage, { inputTokens: 1000, outputTokens: 100, totalTokens: 1100, cachedReadTokens: 400 });

      // A bash that runs until the turn is cancelled: terminal/kill, then
      // terminal/release.
      const slow = cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'run the long one' }] });
      await until(() => calls.some(([m, p]) => m === 'terminal/wait_for_exit' && p.terminalId === 'term-2'), 'the long command');
      await cx.notify('session/cancel', { sessionId });
      const r2 = await slow;
      assert.equal(r2.stopReason, 'cancelled');
      const order2 = calls.filter(([m, p]) => m.startsWith('terminal/') && p.terminalId === 'term-2').map(([m]) => m);
      assert.deepEqual(order2.filter((m) => m !== 'terminal/output'), ['terminal/wait_for_exit', 'terminal/kill', 'terminal/release']);

      // $/cancel_request on a prompt: the request answers -32800.
      const ac = new AbortController();
      const pending = cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'take your time' }] }, { cancellationSignal: ac.signal });
      await new Promise((r) => setTimeout(r, 300));
      ac.abort();
      await assert.rejects(pending, (err) => { assert.equal(err.code, -32800, JSON.stringify(err)); return true; });

      // Config options: approval to auto (a current_mode_update follows for
      // clients that read modes), auto-compaction off, then approval back to
      // ask through session/set_mode (a config_option_update follows). Each
      // change is a settings entry of the transcript.
      let from = updates.length;
      const set1 = await cx.request('session/set_config_option', { sessionId, configId: 'approval', value: 'auto' });
      assert.equal(option(set1.configOptions, 'approval').currentValue, 'auto');
      await until(() => updates.slice(from).some((u) => u.update.sessionUpdate === 'current_mode_update'), 'current_mode_update');
      assert.equal(updates.slice(from).find((u) => u.update.sessionUpdate === 'current_mode_update').update.currentModeId, 'auto');
      const set2 = await cx.request('session/set_config_option', { sessionId, configId: 'auto_compaction', type: 'boolean', value: false });
      assert.equal(option(set2.configOptions, 'auto_compaction').currentValue, false);
      await assert.rejects(cx.request('session/set_config_option', { sessionId, configId: 'approval', value: 'sometimes' }),
        (err) => { assert.equal(err.code, -32602); return true; });
      from = updates.length;
      await cx.request('session/set_mode', { sessionId, modeId: 'ask' });
      await until(() => updates.slice(from).some((u) => u.update.sessionUpdate === 'config_option_update'), 'config_option_update');
      const synced = updates.slice(from).find((u) => u.update.sessionUpdate === 'config_option_update').update.configOptions;
      assert.equal(option(synced, 'approval').currentValue, 'ask');
      const transcript = fs.readFileSync(path.join(cwd, '.soba', 'sessions', `${sessionId}.jsonl`), 'utf8')
        .trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'settings').map((e) => e.settings);
      assert.deepEqual(transcript.filter((t) => t.approval || t.autoCompact !== undefined),
        [{ approval: 'auto' }, { autoCompact: false }, { approval: 'ask' }], JSON.stringify(transcript));

      // The model and the summary model, chosen among the user's `models`
      // by name: the configured (inline) one is "(settings)"; a name not
      // among them is refused, naming them; a change is a settings entry.
      for (const id of ['model', 'summary_model']) {
        const o = option(created.configOptions, id);
        assert.deepEqual([o?.type, o?.category, o?.currentValue], ['select', 'model', '(settings)'], JSON.stringify(created.configOptions));
        assert.deepEqual(o.options.map((c) => c.value), ['(settings)', 'alt', 'main']);
      }
      await assert.rejects(cx.request('session/set_config_option', { sessionId, configId: 'model', value: 'huge' }),
        (err) => { assert.equal(err.code, -32602); assert.match(JSON.stringify(err), /huge.*choose one of: \(settings\), alt, main/); return true; });
      const set3 = await cx.request('session/set_config_option', { sessionId, configId: 'model', value: 'alt' });
      assert.equal(option(set3.configOptions, 'model').currentValue, 'alt');
      const set4 = await cx.request('session/set_config_option', { sessionId, configId: 'summary_model', value: 'main' });
      assert.deepEqual([option(set4.configOptions, 'model').currentValue, option(set4.configOptions, 'summary_model').currentValue], ['alt', 'main']);
      const picks = fs.readFileSync(path.join(cwd, '.soba', 'sessions', `${sessionId}.jsonl`), 'utf8')
        .trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'settings' && (e.settings.model || e.settings.summaryModel))
        .map((e) => e.settings);
      assert.deepEqual(picks, [{ model: 'alt' }, { summaryModel: 'main' }]);

      // session/list without cwd, then session/delete.
      const listed = await cx.request('session/list', {});
      assert.ok(listed.sessions.some((s) => s.sessionId === sessionId && s.cwd === cwd), JSON.stringify(listed));
      assert.deepEqual(await cx.request('session/delete', { sessionId }), {});
      const after = await cx.request('session/list', { cwd });
      assert.ok(!after.sessions.some((s) => s.sessionId === sessionId), JSON.stringify(after));
      assert.ok(fs.existsSync(path.join(cwd, '.soba', 'sessions', 'deleted', `${sessionId}.jsonl`)), 'the deleted session is kept aside');
      assert.deepEqual(await cx.request('session/delete', { sessionId }), {}, 'deleting again succeeds silently');
      assert.deepEqual(await cx.request('session/delete', { sessionId: 's_never' }), {});
    });
  } catch (err) {
    err.message += `\nstderr:\n${stderr}`;
    throw err;
  } finally {
    child.stdin.end();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    child.kill();
  }
});
