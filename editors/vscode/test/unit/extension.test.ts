import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { changeConfiguration, fake, grantTrust, Uri, workspace } from '../fake/vscode';

// vscode-languageclient needs the editor; the extension's use of it is checked
// against this recording fake of its LanguageClient.
const clients: FakeClient[] = [];
class FakeClient {
  features: { initialize(): void }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  requestHandlers = new Map<string, unknown>();
  notificationHandlers = new Map<string, unknown>();
  running = false;
  initializeResult = { serverInfo: { name: 'soba-lsp', version: 'test' } };
  constructor(readonly id: string, readonly name: string, readonly serverOptions: any, readonly clientOptions: any) {
    clients.push(this);
  }
  registerFeature(f: { initialize(): void }) { this.features.push(f); }
  onNotification(m: string, h: unknown) { this.notificationHandlers.set(m, h); return { dispose() {} }; }
  onRequest(m: string, h: unknown) { this.requestHandlers.set(m, h); return { dispose() {} }; }
  onDidChangeState() { return { dispose() {} }; }
  async start() { this.running = true; for (const f of this.features) f.initialize(); }
  async stop() { this.running = false; }
  isRunning() { return this.running; }
  async sendNotification(method: string, params: unknown) { this.notifications.push({ method, params }); }
  requests: { method: string; params: any }[] = [];
  async sendRequest(method: string, params: any) {
    this.requests.push({ method, params });
    const budget = { effectiveTokens: 1000, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000, safetyReserveTokens: 8192, source: 'estimated', autoCompact: true, pending: [], state: 'idle', lastCompaction: null, cachedTokens: 0 };
    if (method === 'workspace/executeCommand' && params.command === 'soba.budget') return budget;
    // soba.run as the server answers it: /budget runs soba.budget, anything else here is a prompt.
    if (method === 'workspace/executeCommand' && params.command === 'soba.run') {
      if (params.arguments[0].text === '/budget') {
        return { kind: 'command', command: 'soba.budget', result: budget, lines: ['budget · 1,000 / 48,808 tokens · soft 39,046 · estimated · auto-compact on · idle'] };
      }
      return { kind: 'prompt', turnId: 't1', queued: false, text: params.arguments[0].text };
    }
    throw new Error(`unexpected ${method}`);
  }
}
vi.mock('vscode-languageclient/node', () => ({
  LanguageClient: FakeClient,
  RevealOutputChannelOn: { Never: 4 },
  State: { Stopped: 1, Running: 2, Starting: 3 },
  TransportKind: { stdio: 0 },
}));

const { activate, deactivate } = await import('../../src/extension');

let last: { subscriptions: { dispose(): void }[] } | undefined;
function context(extensionPath: string) {
  last = { subscriptions: [] as { dispose(): void }[], extensionPath, extensionUri: Uri.file(extensionPath) } as any;
  return last as any;
}

/** fakeDirs are the stand-ins' directories, removed after the file's tests: a run leaves nothing in /tmp. */
const fakeDirs: string[] = [];
afterAll(() => {
  for (const d of fakeDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** fakeServer writes an executable stand-in for soba-lsp. */
function fakeServer(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-ext-'));
  fakeDirs.push(dir);
  const bin = path.join(dir, 'soba-lsp');
  fs.writeFileSync(bin, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return bin;
}

beforeEach(async () => {
  await deactivate();
  // What VS Code does on deactivation.
  for (const d of last?.subscriptions ?? []) d.dispose();
  fake.reset();
  clients.length = 0;
});

describe('activation', () => {
  it('starts soba.serverPath over stdio with the settings the user set as initializationOptions', async () => {
    const bin = fakeServer();
    fake.configuration['soba.serverPath'] = { globalValue: bin };
    fake.configuration['soba.model.name'] = { globalValue: 'qwen2.5-coder:14b', defaultValue: 'qwen2.5-coder:7b' };
    fake.configuration['soba.model.provider'] = { defaultValue: 'ollama' };
    fake.configuration['soba.tools.approval'] = { workspaceValue: 'auto' };
    await activate(context('/nonexistent-ext'));
    expect(clients).toHaveLength(1);
    const c = clients[0];
    // Plain stdio: no `transport`, which would add a `--stdio` argument soba-lsp rejects.
    expect(c.serverOptions).toStrictEqual({ command: bin, args: [], options: { cwd: undefined } });
    // The workspace's tools.approval is the repository's (R-W5): sent apart from the user's settings.
    expect(c.clientOptions.initializationOptions).toStrictEqual({
      model: { name: 'qwen2.5-coder:14b' },
      workspaceTrusted: true,
      repositorySettings: { tools: { approval: 'auto' } },
    });
    expect(c.clientOptions.documentSelector).toEqual([{ scheme: 'file' }]);
    // Lean sync: open, close and save reach the server; keystrokes do not (the next step is never called).
    const next = vi.fn();
    await c.clientOptions.middleware.didChange({ document: {}, contentChanges: [{ text: 'x' }] }, next);
    expect(next).not.toHaveBeenCalled();
    expect(c.clientOptions.middleware.didOpen).toBeUndefined();
    expect(c.clientOptions.middleware.didSave).toBeUndefined();
    expect(c.clientOptions.middleware.didClose).toBeUndefined();
    // Our handlers replace the client's for progress and approvals.
    expect([...c.requestHandlers.keys()].sort()).toEqual(['window/showMessageRequest', 'window/workDoneProgress/create']);
    expect([...c.notificationHandlers.keys()].sort()).toEqual(['soba/budget', 'soba/compaction', 'soba/event']);
    await vi.waitFor(() => expect(fake.statusItems[0].text).toBe('SOBA 1.0k / 48.8k (2%)'));
    expect(fake.messages).toEqual([]); // the first budget comes without a message
  });

  it('forwards setting changes as didChangeConfiguration with settings.soba', async () => {
    fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
    await activate(context('/nonexistent-ext'));
    fake.configuration['soba.compaction'] = { globalValue: { timeoutMs: 9000 } };
    changeConfiguration(['soba.compaction']);
    expect(clients[0].notifications).toEqual([
      { method: 'workspace/didChangeConfiguration', params: { settings: { soba: { compaction: { timeoutMs: 9000 }, workspaceTrusted: true, repositorySettings: {} } } } },
    ]);
    changeConfiguration(['editor.fontSize']);
    expect(clients[0].notifications).toHaveLength(1);
  });

  it('a restricted workspace says so at initialize, its model endpoint apart; trusting it sends didChangeConfiguration (R-W5)', async () => {
    fake.trusted = false;
    fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
    fake.configuration['soba.model.baseURL'] = { globalValue: 'https://api.openai.com/v1', workspaceValue: 'http://127.0.0.1:9/attacker' };
    await activate(context('/nonexistent-ext'));
    expect(clients[0].clientOptions.initializationOptions).toStrictEqual({
      model: { baseURL: 'https://api.openai.com/v1' },
      workspaceTrusted: false,
      repositorySettings: { model: { baseURL: 'http://127.0.0.1:9/attacker' } },
    });
    const asked = clients[0].requests.length;
    grantTrust();
    expect(clients).toHaveLength(1); // no restart: the running server is told
    // …and the budget is asked again, so the shield goes as soon as the settings apply.
    await vi.waitFor(() => expect(clients[0].requests.slice(asked).map((r) => r.params.command)).toEqual(['soba.budget']));
    expect(clients[0].notifications).toEqual([
      {
        method: 'workspace/didChangeConfiguration',
        params: { settings: { soba: { model: { baseURL: 'https://api.openai.com/v1' }, workspaceTrusted: true, repositorySettings: { model: { baseURL: 'http://127.0.0.1:9/attacker' } } } } },
      },
    ]);
  });

  it('a relative soba.serverPath is not started in a restricted workspace, and is once it is trusted (R-W5)', async () => {
    const ws = path.dirname(fakeServer());
    workspace.workspaceFolders = [{ uri: Uri.file(ws) }];
    fake.trusted = false;
    fake.configuration['soba.serverPath'] = { globalValue: 'soba-lsp' };
    await activate(context('/nonexistent-ext'));
    expect(clients).toHaveLength(0);
    expect(fake.messages.map((m) => m.message).join('\n')).toContain('is relative, so it names');
    grantTrust();
    await vi.waitFor(() => expect(clients).toHaveLength(1));
    expect(clients[0].serverOptions.command).toBe(path.join(ws, 'soba-lsp'));
    workspace.workspaceFolders = undefined;
  });

  it('a soba.serverPath event that changes nothing (a trusted folder re-read) does not restart the server', async () => {
    fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
    await activate(context('/nonexistent-ext'));
    changeConfiguration(['soba.serverPath', 'soba.model.baseURL']);
    await new Promise((r) => setTimeout(r, 50));
    expect(clients).toHaveLength(1);
    expect(clients[0].running).toBe(true);
    expect(clients[0].notifications.map((n) => n.method)).toEqual(['workspace/didChangeConfiguration']);
  });

  it('restarts the server when soba.serverPath changes', async () => {
    fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
    await activate(context('/nonexistent-ext'));
    const other = fakeServer();
    fake.configuration['soba.serverPath'] = { globalValue: other };
    changeConfiguration(['soba.serverPath']);
    await vi.waitFor(() => expect(clients).toHaveLength(2));
    expect(clients[0].running).toBe(false);
    expect(clients[1].serverOptions.command).toBe(other);
  });

  it('uses the binary bundled in the extension when no setting is given', async () => {
    const bin = fakeServer();
    const ext = path.dirname(path.dirname(bin));
    fs.mkdirSync(path.join(ext, 'bin'), { recursive: true });
    fs.copyFileSync(bin, path.join(ext, 'bin', 'soba-lsp'));
    fs.chmodSync(path.join(ext, 'bin', 'soba-lsp'), 0o755);
    await activate(context(ext));
    expect(clients[0].serverOptions.command).toBe(path.join(ext, 'bin', 'soba-lsp'));
  });

  it('a missing server is a clear error with the fix, and no client', async () => {
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await activate(context('/nonexistent-ext'));
    } finally {
      process.env.PATH = saved;
    }
    expect(clients).toHaveLength(0);
    expect(fake.messages[0]).toMatchObject({ level: 'error', items: ['Open Settings', 'Show Output'] });
    expect(fake.messages[0].message).toContain('go install github.com/soba-agent/soba-lsp/cmd/soba-lsp@latest');
    expect(fake.statusItems[0].text).toBe('$(debug-disconnect) SOBA');
  });
});

/** fakeWebviewView is the part of a WebviewView the sidebar uses; send() posts a message from the webview script. */
function fakeWebviewView() {
  let receive: (m: unknown) => void = () => {};
  const view = {
    visible: true,
    webview: {
      options: {},
      html: '',
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: Uri) => u,
      onDidReceiveMessage: (l: (m: unknown) => void) => ((receive = l), { dispose() {} }),
      postMessage: async () => true,
    },
    onDidChangeVisibility: () => ({ dispose() {} }),
    onDidDispose: () => ({ dispose() {} }),
  };
  return { view, send: (m: unknown) => receive(m) };
}

describe("the sidebar's prompt box sends what was typed through soba.run", () => {
  async function sidebar() {
    fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
    const ext = await activate(context('/nonexistent-ext'));
    const { view, send } = fakeWebviewView();
    (fake.webviewProviders.get('soba.sidebar') as any).resolveWebviewView(view);
    const c = clients[0];
    // The first budget, the reopened session's newest page (soba.session.transcript), and, as this fake server
    // does not answer it, the earlier requests (soba.session.history).
    await vi.waitFor(() => expect(c.requests).toHaveLength(3));
    c.requests.length = 0;
    return { c, send, ext };
  }
  const commandsSent = (c: FakeClient) => c.requests.filter((r) => r.method === 'workspace/executeCommand').map((r) => r.params);

  it('/budget goes through soba.run and the lines it answers are shown', async () => {
    const { c, send, ext } = await sidebar();
    send({ type: 'ask', text: '/budget' });
    const line = 'budget · 1,000 / 48,808 tokens · soft 39,046 · estimated · auto-compact on · idle';
    await vi.waitFor(() => expect(fake.messages.map((m) => m.message)).toContain(`SOBA: ${line}`));
    expect(commandsSent(c)).toEqual([{ command: 'soba.run', arguments: [{ text: '/budget' }] }]);
    expect(ext.model.snapshot().stream.map((i) => (i.kind === 'status' ? i.text : i.kind))).toEqual(['› /budget', line]);
  });

  it('a prompt goes through soba.run and starts a turn', async () => {
    const { c, send, ext } = await sidebar();
    send({ type: 'ask', text: '/usr/bin is missing' });
    await vi.waitFor(() => expect(commandsSent(c)).toEqual([{ command: 'soba.run', arguments: [{ text: '/usr/bin is missing' }] }]));
    await vi.waitFor(() => expect(ext.model.snapshot().stream).toMatchObject([{ turnId: 't1', kind: 'user', text: '/usr/bin is missing' }]));
  });

  it('card actions name an item the extension showed; Copy, Retry and Open settings do what they say', async () => {
    const { c, send, ext } = await sidebar();
    const ran: unknown[][] = [];
    fake.commands.set('workbench.action.openSettings', (...a: unknown[]) => ran.push(['settings', ...a]));
    ext.model.applyUserPrompt('t9', 'fix the parser');
    ext.model.applyEvent({ turnId: 't9', type: 'turn_start' });
    ext.model.applyEvent({ turnId: 't9', type: 'turn_end', outcome: 'failed', error: 'dial tcp 127.0.0.1:11434: connection refused' });
    const err = ext.model.stream.find((i) => i.kind === 'error')!;
    send({ type: 'copy', text: 'go test ./...' });
    expect(fake.clipboard).toBe('go test ./...');
    send({ type: 'action', action: 'settings', key: err.key });
    await vi.waitFor(() => expect(ran).toEqual([['settings', 'soba.model']]));
    send({ type: 'action', action: 'retry', key: err.key });
    await vi.waitFor(() => expect(commandsSent(c)).toEqual([{ command: 'soba.run', arguments: [{ text: 'fix the parser' }] }]));
    // A key or a path the extension never showed does nothing.
    c.requests.length = 0;
    send({ type: 'action', action: 'retry', key: 'forged' });
    send({ type: 'action', action: 'open-path', path: '/etc/passwd' });
    await new Promise((r) => setTimeout(r, 20));
    expect(commandsSent(c)).toEqual([]);
    expect(fake.shownDocuments).toEqual([]);
  });
});

describe('Open file and Open diff on a tool card', () => {
  it('diffs a written file against its content when the session first saw it; without one, opens the file and says why', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-ws-'));
    workspace.workspaceFolders = [{ uri: Uri.file(root) }];
    try {
      fs.writeFileSync(path.join(root, 'a.go'), 'package a\n');
      fake.configuration['soba.serverPath'] = { globalValue: fakeServer() };
      const ext = await activate(context('/nonexistent-ext'));
      const event = clients[0].notificationHandlers.get('soba/event') as (e: unknown) => void;
      const diffs: unknown[][] = [];
      fake.commands.set('vscode.diff', (...a: unknown[]) => diffs.push(a));
      // Under approval "ask" the call reaches the editor before the tool runs.
      event({ turnId: 't1', type: 'turn_start' });
      event({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'write_file', arguments: { path: 'a.go', content: 'package a\n\nfunc A() {}\n' } });
      fs.writeFileSync(path.join(root, 'a.go'), 'package a\n\nfunc A() {}\n');
      event({ turnId: 't1', type: 'tool_result', id: 'c1', ok: true, summary: 'wrote a.go' });
      event({ turnId: 't1', type: 'tool_call', id: 'c2', name: 'write_file', arguments: { path: 'late.go', content: 'x' } });
      const card = ext.model.stream.find((i) => i.kind === 'tool' && i.toolId === 'c1');
      await ext.sidebarAction('diff', card, undefined);
      expect(diffs).toHaveLength(1);
      const [left, right, title] = diffs[0] as [Uri, Uri, string];
      expect(left.toString()).toBe('soba-before:///a.go');
      expect(await fake.contentProviders.get('soba-before')!.provideTextDocumentContent(left)).toBe('package a\n');
      expect(right).toMatchObject({ scheme: 'file', fsPath: path.join(root, 'a.go') });
      expect(title).toBe('a.go (before SOBA ↔ now)');
      // late.go did not exist when the call arrived: it is new, the diff is against nothing.
      await ext.sidebarAction('diff', undefined, undefined);
      expect(diffs).toHaveLength(1);
      // A path the session never saw: no diff, the file opens and a message says why.
      fs.writeFileSync(path.join(root, 'b.go'), 'package b\n');
      await (ext as any).openDiff('b.go');
      expect(fake.messages.map((m) => m.message)).toContain('SOBA: no earlier version of b.go is known in this session; opening the file');
      expect(fake.shownDocuments).toEqual([Uri.file(path.join(root, 'b.go'))]);
      await ext.sidebarAction('open', card, undefined);
      expect(fake.shownDocuments).toHaveLength(2);
    } finally {
      workspace.workspaceFolders = undefined;
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('lean activation (package.json)', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
  it('activates on a workspace with .soba or the view (commands activate by themselves), never at every start', () => {
    expect(pkg.activationEvents).toEqual(['workspaceContains:.soba', 'onView:soba.sidebar']);
    // Commands imply their activation events from VS Code 1.74 on.
    const [major, minor] = /(\d+)\.(\d+)/.exec(pkg.engines.vscode)!.slice(1).map(Number);
    expect(major > 1 || minor >= 74).toBe(true);
  });
  it('ships the webview bundle', () => {
    const ignore = fs.readFileSync(path.join(__dirname, '../../.vscodeignore'), 'utf8');
    expect(ignore).toContain('!dist/webview.js');
  });
});
