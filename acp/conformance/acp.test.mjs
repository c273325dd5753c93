// `soba-lsp acp` driven by the official Agent Client Protocol TypeScript SDK
// (@agentclientprotocol/sdk) over stdio. Run by conformance_test.go, which
// starts the fake model server and writes the workspace's configuration:
// SOBA_LSP is the binary, SOBA_WORKSPACE the workspace.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// The unstable profile: it knows compaction_update (schema 1.7.0), which the
// first client opts in to.
import * as acp from '@agentclientprotocol/sdk/unstable';

const here = path.dirname(fileURLToPath(import.meta.url));

const binary = process.env.SOBA_LSP;
const cwd = process.env.SOBA_WORKSPACE;

// start spawns the agent and connects a client that records every update
// and answers permission requests with `decide(params)`.
function start(decide) {
  const child = spawn(binary, ['acp'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const updates = [];
  const permissions = [];
  const app = acp.client()
    .onRequest('session/request_permission', async ({ params }) => {
      permissions.push(params);
      return { outcome: { outcome: 'selected', optionId: decide(params) } };
    })
    .onNotification('session/update', ({ params }) => { updates.push(params); });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, app, stream, updates, permissions, stderr: () => stderr, exited };
}

const kinds = (updates, from = 0) => updates.slice(from).map((u) => u.update.sessionUpdate);
const text = (updates, from = 0, kind = 'agent_message_chunk') => updates.slice(from)
  .filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content.text).join('');

async function until(cond, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('soba-lsp acp speaks ACP v1 to the official TypeScript SDK', { timeout: 60000 }, async () => {
  assert.ok(binary && cwd, 'set SOBA_LSP and SOBA_WORKSPACE');
  const a = start(() => 'allow_once');
  let sessionId;
  try {
    await a.app.connectWith(a.stream, async (cx) => {
      const init = await cx.request('initialize', {
        protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { session: { compaction: {} } },
      });
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentCapabilities.loadSession, true);
      assert.equal(init.agentInfo.name, 'soba-lsp');
      assert.equal(init.agentCapabilities.mcpCapabilities.http, true);

      // A published MCP server from npm, handed over as ACP does.
      const everything = path.join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
      const s = await cx.request('session/new', {
        cwd, mcpServers: [{ name: 'everything', command: process.execPath, args: [everything, 'stdio'], env: [] }],
      });
      sessionId = s.sessionId;
      assert.match(sessionId, /.+/);
      await until(() => kinds(a.updates).includes('available_commands_update'), 'available_commands_update');
      const cmds = a.updates.find((u) => u.update.sessionUpdate === 'available_commands_update').update.availableCommands;
      for (const name of ['budget', 'compact', 'auto-compact', 'capsule', 'milestone']) {
        assert.ok(cmds.some((c) => c.name === name), `available commands lack ${name}: ${JSON.stringify(cmds)}`);
      }

      // A turn with a write_file call, approved through session/request_permission.
      let from = a.updates.length;
      const r1 = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write the notes' }] });
      assert.equal(r1.stopReason, 'end_turn');
      assert.equal(a.permissions.length, 1);
      const perm = a.permissions[0];
      assert.equal(perm.toolCall.toolCallId, 'c1');
      assert.deepEqual(perm.options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
      const diff = perm.toolCall.content.find((c) => c.type === 'diff');
      assert.ok(diff, `the permission shows the diff (R-W3): ${JSON.stringify(perm.toolCall)}`);
      assert.equal(diff.newText, 'hello from acp\n');
      assert.ok(diff.path.endsWith('notes.txt'));
      const call = a.updates.slice(from).find((u) => u.update.sessionUpdate === 'tool_call');
      assert.equal(call.update.kind, 'edit');
      assert.ok(call.update.locations[0].path.endsWith('notes.txt'));
      const done = a.updates.slice(from).find((u) => u.update.sessionUpdate === 'tool_call_update');
      assert.equal(done.update.status, 'completed');
      assert.match(text(a.updates, from), /Wrote notes\.txt\./);
      assert.ok(kinds(a.updates, from).includes('usage_update'), `no usage_update in ${kinds(a.updates, from)}`);
      const usage = a.updates.filter((u) => u.update.sessionUpdate === 'usage_update').at(-1).update;
      assert.equal(usage.size, 65000 - 8000 - 8192, 'size is the hard limit (R-G4)');
      assert.ok(usage.used > 0);

      // The MCP server's echo tool, asked for like bash and run.
      from = a.updates.length;
      const rm = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'echo please' }] });
      assert.equal(rm.stopReason, 'end_turn');
      assert.equal(a.permissions.length, 2, 'an MCP tool asks for permission');
      assert.equal(a.permissions[1].toolCall.toolCallId, 'c2');
      const echoed = a.updates.slice(from).find((u) => u.update.sessionUpdate === 'tool_call_update');
      assert.equal(echoed.update.status, 'completed');
      assert.match(JSON.stringify(echoed.update.content), /hello over ACP/);
      assert.match(text(a.updates, from), /Echoed\./);

      from = a.updates.length;
      const r2 = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'and again' }] });
      assert.equal(r2.stopReason, 'end_turn');
      assert.match(text(a.updates, from), /Second answer\./);

      // /compact runs through the server's slash grammar; its result line is
      // the agent's message (no compaction opt-in).
      from = a.updates.length;
      const r3 = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/compact keep the notes' }] });
      assert.equal(r3.stopReason, 'end_turn');
      assert.match(text(a.updates, from), /Compacted context · user · .* · ck_/);
      // Opted in: the compaction as compaction_update, in progress, the
      // summary model's answer streamed as compaction_summary_chunk, then
      // completed, its summary the result line and the capsule's sections.
      const compKinds = kinds(a.updates, from).filter((k) => k.startsWith('compaction_'));
      assert.match(compKinds.join(','), /^compaction_update(,compaction_summary_chunk)+,compaction_update$/, compKinds.join(','));
      const comp = a.updates.slice(from).filter((u) => u.update.sessionUpdate === 'compaction_update').map((u) => u.update);
      assert.deepEqual(comp.map((c) => c.status), ['in_progress', 'completed'], JSON.stringify(comp));
      assert.equal(comp[0].compactionId, comp[1].compactionId);
      const chunks = a.updates.slice(from).filter((u) => u.update.sessionUpdate === 'compaction_summary_chunk').map((u) => u.update);
      assert.ok(chunks.every((c) => c.compactionId === comp[0].compactionId && c.content.type === 'text'));
      assert.equal(chunks.map((c) => c.content.text).join(''), '## Goal\nwrite notes\n## Done\n- wrote notes.txt\n');
      assert.match(comp[1].summary[0].text, /^Compacted context · user · .* · ck_/);
      assert.match(comp[1].summary[0].text, /## Goal\n+write notes/);

      // /budget answers with the budget's lines.
      from = a.updates.length;
      await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/budget' }] });
      assert.match(text(a.updates, from), /48,808/);

      // A turn whose model never answers is cancelled (R-F2).
      const slow = cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'take your time' }] });
      await new Promise((r) => setTimeout(r, 300));
      await cx.notify('session/cancel', { sessionId });
      const r4 = await slow;
      assert.equal(r4.stopReason, 'cancelled');
    });
  } catch (err) {
    err.message += ` ${JSON.stringify(err.data ?? null)}\nstderr:\n${a.stderr()}`;
    throw err;
  } finally {
    a.child.stdin.end();
    await Promise.race([a.exited, new Promise((r) => setTimeout(r, 5000))]);
    a.child.kill();
  }

  // A second process loads the session and receives its history.
  const b = start(() => 'reject_once');
  try {
    await b.app.connectWith(b.stream, async (cx) => {
      const init = await cx.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      assert.ok(init.agentCapabilities.sessionCapabilities.list, 'session/list is announced');
      const listed = await cx.request('session/list', { cwd });
      assert.ok(listed.sessions.some((s) => s.sessionId === sessionId && s.cwd === cwd), JSON.stringify(listed));
      // Its title is its first request (soba.session.list's title).
      assert.equal(listed.sessions.find((s) => s.sessionId === sessionId).title, 'write the notes', JSON.stringify(listed));
      const files = () => fs.readdirSync(path.join(cwd, '.soba', 'sessions')).filter((f) => f.endsWith('.jsonl')).length;
      const before = files();
      await cx.request('session/load', { sessionId, cwd, mcpServers: [] });
      assert.equal(files(), before, 'session/load made no new session file');
      assert.match(text(b.updates, 0, 'user_message_chunk'), /write the notes/);
      assert.match(text(b.updates, 0, 'user_message_chunk'), /and again/);
      const replayed = b.updates.find((u) => u.update.sessionUpdate === 'tool_call');
      assert.equal(replayed?.update.toolCallId, 'c1');
      assert.ok(b.updates.every((u) => u.sessionId === sessionId));

      // Not opted in: /compact shows its result line, and no compaction_update.
      const from = b.updates.length;
      const r = await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/compact' }] });
      assert.equal(r.stopReason, 'end_turn');
      assert.match(text(b.updates, from), /(Compacted context · user · |(Skipped|Cancelled|Stale|Failed)(: .*)? · user)/);
      assert.ok(!kinds(b.updates).includes('compaction_update'), 'compaction_update sent to a client that did not opt in');
    });
  } catch (err) {
    err.message += `\nstderr:\n${b.stderr()}`;
    throw err;
  } finally {
    b.child.stdin.end();
    await Promise.race([b.exited, new Promise((r) => setTimeout(r, 5000))]);
    b.child.kill();
  }

  // A third process resumes the session: no replay, and it works on.
  const c = start(() => 'reject_once');
  try {
    await c.app.connectWith(c.stream, async (cx) => {
      await cx.request('initialize', { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
      await cx.request('session/resume', { sessionId, cwd });
      assert.ok(!kinds(c.updates).includes('user_message_chunk'), 'session/resume replays nothing');
      const from = c.updates.length;
      await cx.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/budget' }] });
      assert.match(text(c.updates, from), /48,808/);
    });
  } finally {
    c.child.stdin.end();
    await Promise.race([c.exited, new Promise((r) => setTimeout(r, 5000))]);
    c.child.kill();
  }
});
