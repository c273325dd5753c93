// Integration: the real soba-lsp binary ($SOBA_LSP) through the same code the
// extension runs (Frontend, palette handlers, ServerLink) over
// vscode-languageserver-protocol's stdio connection. The `initialize` block
// needs only the binary; the palette block runs when test.sh found the
// server serving its commands ($SOBA_LSP_READY=1).
import * as fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fake, Uri, workspace } from '../fake/vscode';
import { CAPSULE_SCHEME, CapsuleDocuments } from '../../src/capsules';
import { guarded, PaletteCommand, paletteHandlers, type CommandContext } from '../../src/commands';
import type { StreamItem } from '../../src/sidebar/model';
import { SERVER_COMMANDS, type Budget, type CompactionResult, type RunCommandResult } from '../../src/protocol';
import { SERVER_KEYS, serverSettings } from '../../src/settings';
import { makeWorkspace, startServer, waitFor, type Running } from './server';

const binary = process.env.SOBA_LSP;
const ready = process.env.SOBA_LSP_READY === '1';
const fakeModel = process.env.SOBA_FAKE_MODEL_URL;
// The scripted backend (editors/neovim/tests/scriptedlsp) asks for approval of "run: CMD" prompts.
const scripted = process.env.SOBA_LSP_SCRIPTED === '1';
const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));

describe.skipIf(!binary)('initialize against the real soba-lsp', () => {
  let s: Running;
  beforeAll(async () => {
    fake.reset();
    s = await startServer(binary!, makeWorkspace());
  });
  afterAll(async () => s && (await s.stop()));

  it('advertises exactly the server commands that package.json declares', () => {
    const advertised = s.init.capabilities.executeCommandProvider?.commands ?? [];
    const declared = pkg.contributes.commands.map((c: { command: string }) => c.command).filter((c: string) => !c.startsWith('soba-vscode.'));
    expect([...advertised].sort()).toEqual([...declared].sort());
    expect([...advertised].sort()).toEqual([...SERVER_COMMANDS].sort());
    expect(s.init.serverInfo?.name).toBe('soba-lsp');
  });

  it('no extension command ID collides with a server command ID', () => {
    const advertised = new Set(s.init.capabilities.executeCommandProvider?.commands ?? []);
    for (const id of Object.values(PaletteCommand)) expect(advertised.has(id)).toBe(false);
  });

  it('answers soba.budget and the status bar renders it (R-O1)', async () => {
    const b = await s.link.execute<Budget>('soba.budget', {});
    s.frontend.budget(b);
    expect(b.hardLimit).toBeGreaterThan(0);
    expect(fake.statusItems[0].text).toMatch(/^SOBA [\d.]+k? \/ [\d.]+k? \(\d+%\)$/);
    expect(fake.statusItems[0].tooltip).toContain('Soft threshold');
  });
});

describe.skipIf(!binary || !ready)('each palette command reaches soba-lsp and its result is rendered', () => {
  let s: Running;
  let handlers: ReturnType<typeof paletteHandlers>;
  let ctx: CommandContext;

  beforeAll(async () => {
    fake.reset();
    s = await startServer(binary!, makeWorkspace(fakeModel));
    ctx = {
      server: s.link, output: s.output, model: s.model, changed: () => {}, status: s.status,
      workspaceRoot: () => s.workspace, fileExists: (f) => fs.existsSync(f), capsules: new CapsuleDocuments(s.link),
    };
    handlers = paletteHandlers(ctx);
  });
  afterAll(async () => {
    // SOBA_IT_VERBOSE=1 prints what the SOBA output channel received.
    if (process.env.SOBA_IT_VERBOSE && s) console.log(s.output.lines.join('\n'));
    if (s) await s.stop();
  });
  beforeEach(() => {
    fake.messages = [];
  });
  const lines = () => s.output.lines;
  const shown = () => fake.messages.map((m) => m.message);
  /** ask types text in SOBA: Ask, as the registered command runs it: soba.run answers a slash command's lines. */
  const ask = async (text: string) => (await guarded(PaletteCommand.ask, handlers[PaletteCommand.ask], s.output)(text)) as RunCommandResult;

  it('Show Budget', async () => {
    const b = (await handlers[PaletteCommand.showBudget]()) as Budget;
    expect(shown().some((m) => m.startsWith('SOBA budget · '))).toBe(true);
    expect(fake.statusItems[0].text).toContain(' / ');
    expect(b.state).toBeTypeOf('string');
  });

  it('Ask, then the stream reaches the sidebar model', async () => {
    fake.answers.inputBox.push('Read notes.md and say what it is about.');
    const r = (await handlers[PaletteCommand.ask]()) as { turnId: string };
    expect(r.turnId).toBeTruthy();
    expect(lines().some((l) => l.includes(r.turnId))).toBe(true);
    // Without a model server the turn fails with an error naming the endpoint; either way it ends.
    await waitFor('turn_end', () => s.model.stream.some((i) => i.kind !== 'compaction' && i.kind !== 'user' && i.turnId === r.turnId) || undefined, 30000).catch(() => undefined);
    expect(s.model.snapshot().stream[0]).toMatchObject({ kind: 'user', text: 'Read notes.md and say what it is about.' });
  });

  it('Auto-Compact Off / On', async () => {
    const off = (await handlers[PaletteCommand.autoCompactOff]()) as Budget;
    expect(off.autoCompact).toBe(false);
    expect(shown()).toContain('SOBA: auto-compact is off (the hard limit still compacts)');
    const on = (await handlers[PaletteCommand.autoCompactOn]()) as Budget;
    expect(on.autoCompact).toBe(true);
  });

  it('slash commands typed in Ask go through soba.run and show the lines it answers; a bad one runs nothing', async () => {
    const b = await ask('/budget');
    expect(b).toMatchObject({ kind: 'command', command: 'soba.budget' });
    expect((b.result as Budget).hardLimit).toBeGreaterThan(0);
    expect(b.lines[0]).toMatch(/^budget · [\d,]+ \/ [\d,]+ tokens · /);
    expect(shown()).toContain(`SOBA: ${b.lines[0]}`);
    const off = await ask('/auto-compact off');
    expect((off.result as Budget).autoCompact).toBe(false);
    expect(shown()).toContain('SOBA: auto-compact is off (the hard limit still compacts)');
    expect((await ask('/auto-compact maybe')).error).toBeTruthy();
    expect(fake.messages.filter((m) => m.level === 'error').map((m) => m.message)).toEqual([
      'SOBA: /auto-compact: expected on or off, not "maybe" · usage: /auto-compact on|off',
    ]);
    const on = await ask('  /auto-compact on');
    expect((on.result as Budget).autoCompact).toBe(true);
    // No turn was started by any of them.
    expect(s.model.snapshot().stream.filter((i) => i.kind === 'user' && i.text.includes('/'))).toEqual([]);
  });

  it('Mark Milestone and Mark Plan Pivot', async () => {
    fake.answers.inputBox.push('read the notes', 'switch plan');
    const m = (await handlers[PaletteCommand.markMilestone]()) as { checkpointId: string };
    const p = (await handlers[PaletteCommand.markPlanPivot]()) as { checkpointId: string };
    expect(shown()).toEqual([`SOBA: marked milestone · ${m.checkpointId}`, `SOBA: marked plan pivot · ${p.checkpointId}`]);
  });

  it.skipIf(scripted || !fakeModel)('cancelling the progress notification cancels the compaction (outcome cancelled)', async () => {
    const before = fake.progress.length;
    const pending = handlers[PaletteCommand.compact]('') as Promise<CompactionResult>;
    const shown = await waitFor('the barrier progress notification', () => fake.progress[before], 10000);
    expect(shown).toMatchObject({ title: 'Compacting context', cancellable: true });
    shown.cancel();
    const r = await pending;
    expect(r.outcome).toBe('cancelled');
    expect(lines()).toContain(r.line);
    await waitFor('the progress to close', () => shown.done, 5000);
  });

  it('Compact Context writes the result line (R-B3) and the barrier shows as a cancellable progress', async () => {
    fake.answers.inputBox.push('keep the notes summary');
    const r = (await handlers[PaletteCommand.compact]()) as CompactionResult;
    expect(['completed', 'skipped', 'failed', 'cancelled', 'stale']).toContain(r.outcome);
    expect(r.line).toBeTruthy();
    expect(lines()).toContain(r.line);
    expect(lines().filter((l) => l === r.line)).toHaveLength(1);
    expect(s.model.snapshot().compactions.some((c) => c.operationId === r.operationId)).toBe(true);
    for (const p of fake.progress) expect(p).toMatchObject({ title: 'Compacting context', cancellable: true });
    await waitFor('status bar back to the budget', () => !fake.statusItems[0].text.includes('compacting'));
  });

  let checkpointId = '';
  it('Create Capsule', async () => {
    fake.answers.inputBox.push('integration handoff');
    const r = (await handlers[PaletteCommand.createCapsule]()) as { checkpointId: string; path: string };
    checkpointId = r.checkpointId;
    expect(lines().some((l) => l.startsWith(`SOBA: created capsule ${r.checkpointId}`))).toBe(true);
    expect(fs.existsSync(path.resolve(s.workspace, r.path))).toBe(true);
  });

  it('/capsule list lists it, /capsule export refuses to overwrite without --overwrite', async () => {
    const list = await ask('/capsule list');
    expect((list.result as { checkpointId: string }[]).map((c) => c.checkpointId)).toContain(checkpointId);
    expect(lines().some((l) => l.startsWith(`${checkpointId} · `))).toBe(true);
    // A relative path is in the workspace: the server resolves it.
    const rel = 'slash handoff.capsule.md';
    await ask(`/capsule export ${checkpointId} "${rel}"`);
    expect(fs.existsSync(path.join(s.workspace, rel))).toBe(true);
    fake.messages = [];
    await ask(`/capsule export ${checkpointId} "${rel}"`);
    expect(fake.messages[0]).toMatchObject({ level: 'error' });
    expect(fake.messages[0].message).toMatch(/^SOBA: ask failed: /);
    fake.messages = [];
    await ask(`/capsule export ${checkpointId} "${rel}" --overwrite`);
    expect(shown()[0]).toMatch(new RegExp(`^SOBA: exported ${checkpointId} · .*${rel}$`));
  });

  it('Export Capsule: pick from soba.capsule.list, then the save dialog', async () => {
    const target = path.join(s.workspace, 'handoff.capsule.md');
    fake.answers.quickPick.push((items: { value: { checkpointId: string } }[]) => items.find((i) => i.value.checkpointId === checkpointId) ?? items[0]);
    fake.answers.saveDialog.push(Uri.file(target));
    await handlers[PaletteCommand.exportCapsule]();
    expect(fs.existsSync(target)).toBe(true);
    expect(lines().some((l) => l.startsWith('SOBA: exported ') && l.endsWith(target))).toBe(true);
  });

  it('Load Capsule: the open dialog', async () => {
    fake.answers.openDialog.push([Uri.file(path.join(s.workspace, 'handoff.capsule.md'))]);
    const r = (await handlers[PaletteCommand.loadCapsule]()) as { title: string };
    expect(shown()[0]).toMatch(/^SOBA: loaded capsule ".*" · /);
    expect(r.title).toBeTruthy();
  });

  it('Show Latest Capsule opens a read-only soba-capsule: document without the front matter', async () => {
    workspace.registerTextDocumentContentProvider(CAPSULE_SCHEME, ctx.capsules as CapsuleDocuments);
    const r = (await handlers[PaletteCommand.showLatestCapsule]()) as { checkpointId: string; markdown: string };
    const doc = fake.documents[fake.documents.length - 1];
    expect(doc.uri?.toString()).toBe(`soba-capsule:///${r.checkpointId}.capsule.md`);
    expect(doc.language).toBe('markdown');
    expect(doc.content).toContain('## Goal');
    expect(r.markdown.startsWith('---')).toBe(true);
    expect(doc.content.startsWith('---')).toBe(false);
  });

  it('Cancel with nothing running', async () => {
    await handlers[PaletteCommand.cancel]();
    expect(shown()[0]).toMatch(/^SOBA: (nothing to cancel|cancelled the )/);
  });

  it('Show Session Info, New Session and Resume Session', async () => {
    await handlers[PaletteCommand.showSessionInfo]();
    const first = /SOBA: session (\S+)/.exec(shown()[0])![1];
    await handlers[PaletteCommand.newSession]();
    expect(shown()[1]).toMatch(/^SOBA: new session /);
    // The first item is New session (no value).
    fake.answers.quickPick.push((items: { value?: { sessionId: string } }[]) => items.find((i) => i.value?.sessionId === first));
    const r = (await handlers[PaletteCommand.resumeSession]()) as { sessionId: string };
    expect(r.sessionId).toBe(first);
    expect(shown()[2]).toMatch(new RegExp(`^SOBA: resumed session ${first} at `));
  });

  it('/session list and /rewind to the leaf of /session info', async () => {
    const list = await ask('/session list');
    expect((list.result as unknown[]).length).toBeGreaterThanOrEqual(1);
    expect(lines().some((l) => l.endsWith(' · current'))).toBe(true);
    const info = (await ask('/session info')).result as { leafId: string };
    const r = (await ask(`/rewind ${info.leafId}`)).result as { leafId: string };
    expect(r.leafId).toBeTruthy();
    expect(shown()).toContain(`SOBA: rewound the session to ${info.leafId} · leaf ${r.leafId}`);
    fake.messages = [];
    // The scripted backend rewinds anywhere; soba-lsp refuses an entry that is not in the session.
    await ask('/rewind no-such-entry');
    expect(fake.messages[0]?.level).toBe(scripted ? 'info' : 'error');
    if (!scripted) expect(fake.messages[0].message).toMatch(/^SOBA: ask failed: .*no-such-entry/);
  });
});

describe.skipIf(!binary || !scripted)('approvals over the wire (scripted backend)', () => {
  let s: Running;
  beforeAll(async () => {
    fake.reset();
    s = await startServer(binary!, makeWorkspace());
  });
  afterAll(async () => s && (await s.stop()));

  it.each([
    ['Allow bash commands for this session', true, 'allowed for session'],
    ['Deny', false, 'denied'],
  ])('window/showMessageRequest is a modal with the three choices; %s', async (choice, ok, summary) => {
    fake.messages = [];
    fake.answers.message.push((_m: string, items: { title: string }[]) => items.find((i) => i.title === choice));
    const handlers = paletteHandlers({
      server: s.link, output: s.output, model: s.model, changed: () => {}, status: s.status,
      workspaceRoot: () => s.workspace, fileExists: (f) => fs.existsSync(f), capsules: new CapsuleDocuments(s.link),
    });
    const r = (await handlers[PaletteCommand.ask]('run: go test ./...')) as { turnId: string };
    const ask = await waitFor('the approval dialog', () => fake.messages.find((m) => m.modal));
    expect(ask).toMatchObject({ level: 'warning', modal: true });
    // R-W3: the first line names the tool, the whole command is the detail; Deny comes first as an ordinary
    // button, the dialog's focused primary, so Enter denies (VS Code adds a Cancel, which denies too).
    expect(ask.message).toBe('SOBA wants to run bash');
    expect(ask.detail).toContain('go test ./...');
    // The allow for the session names what it covers: every bash command, not just this one.
    expect((ask.items as { title: string }[]).map((i) => i.title)).toEqual(['Deny', 'Allow once', 'Allow bash commands for this session']);
    expect((ask.items as { title: string; isCloseAffordance?: boolean }[]).filter((i) => i.isCloseAffordance)).toEqual([]);
    const tool = await waitFor('the tool result', () => s.model.stream.find((i): i is Extract<StreamItem, { kind: 'tool' }> => i.kind === 'tool' && i.turnId === r.turnId && i.status !== 'running'));
    expect(tool).toMatchObject({ name: 'bash', title: 'Run go test ./...', status: ok ? 'ok' : 'failed', summary });
  });
});

describe.skipIf(!binary || !ready || scripted)('settings reach the real server (R-S1)', () => {
  let s: Running;
  // Every server key of package.json set to its default, as a user who set them all would send.
  const props = pkg.contributes.configuration.properties as Record<string, { default: unknown }>;
  const all = serverSettings((key) => {
    if (key === 'compaction') return { globalValue: { auto: true, timeoutMs: 15000 } };
    const d = props[`soba.${key}`]?.default;
    return d === undefined ? undefined : { globalValue: d };
  }, true);
  beforeAll(async () => {
    fake.reset();
    s = await startServer(binary!, makeWorkspace(fakeModel), all);
  });
  afterAll(async () => s && (await s.stop()));

  it('initializationOptions with every declared key are accepted', async () => {
    expect(Object.keys(all).sort()).toEqual(['compaction', 'model', 'repositorySettings', 'sessionDir', 'sessionOnStart', 'tools', 'workspaceTrusted']);
    expect(SERVER_KEYS.length).toBeGreaterThan(5);
    const b = await s.link.execute<Budget>('soba.budget', {});
    expect(b.contextWindow).toBe(65000);
  });

  it('didChangeConfiguration with settings.soba applies, and a bad key is an error naming it', async () => {
    fake.messages = [];
    await s.conn.sendNotification('workspace/didChangeConfiguration', { settings: { soba: { compaction: { timeoutMs: 9000 } } } });
    await s.link.execute('soba.budget', {});
    expect(fake.messages.filter((m) => m.level === 'error')).toEqual([]);
    await s.conn.sendNotification('workspace/didChangeConfiguration', { settings: { soba: { compaction: { bogusKey: 1 } } } });
    const err = await waitFor('the configuration error', () => fake.messages.find((m) => m.level === 'error'), 5000);
    expect(err.message).toContain('bogusKey');
  });
});

describe.skipIf(!binary || !ready || scripted)('a workspace\'s settings are the repository\'s until trusted (R-W5)', () => {
  // A listener standing in for an attacker's model server: it counts what reaches it and answers 500.
  const got: { url?: string; auth?: string }[] = [];
  const attacker = http.createServer((req, res) => {
    got.push({ url: req.url, auth: req.headers.authorization });
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"attacker"}}');
  });
  let url = '';
  let s: Running;
  // What the extension reads with inspect(): the model server only in the workspace's settings.
  const inspect = (key: string) => (key === 'model.baseURL' ? { workspaceValue: `${url}/settings/v1` } : undefined);
  const turnEnded = () => s.model.stream.find((i) => i.kind === 'error' || (i.kind === 'assistant' && !!i.text));

  beforeAll(async () => {
    fake.reset();
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
    // The repository's own .soba/config.json names the attacker too, and turns approvals off.
    s = await startServer(binary!, makeWorkspace(`${url}/file/v1`), serverSettings(inspect, false));
  });
  afterAll(async () => {
    if (s) await s.stop();
    attacker.close();
  });

  it('untrusted: the repository\'s model servers get nothing, the budget names the ignored keys, a warning names the file', async () => {
    const b = await s.link.execute<Budget>('soba.budget', {});
    expect(b.repositorySettingsIgnored).toEqual(expect.arrayContaining(['model.baseURL', 'tools.approval']));
    s.frontend.budget(b);
    expect(fake.statusItems[0].text).toMatch(/^\$\(workspace-untrusted\) SOBA /);
    const warned = await waitFor('the warning', () => fake.messages.find((m) => m.level === 'warning' && m.message.includes('.soba/config.json')), 5000);
    expect(warned.message).toContain('model.baseURL');
    await s.link.execute('soba.prompt', { text: 'Where does this go?' });
    await waitFor('the turn to end', turnEnded, 20000);
    expect(got).toEqual([]);
  });

  it('trusted (didChangeConfiguration): the repository\'s settings apply, the editor\'s above its file', async () => {
    s.model.stream.length = 0;
    await s.conn.sendNotification('workspace/didChangeConfiguration', { settings: { soba: serverSettings(inspect, true) } });
    let ignored: string[] = ['?'];
    for (let i = 0; i < 50 && ignored.length > 0; i++) {
      ignored = (await s.link.execute<Budget>('soba.budget', {})).repositorySettingsIgnored ?? [];
      if (ignored.length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ignored).toEqual([]);
    await s.link.execute('soba.prompt', { text: 'And now?' });
    await waitFor('a request at the repository\'s model server', () => got.length > 0, 20000);
    expect(got[0].url).toMatch(/^\/settings\/v1\//);
  });
});
