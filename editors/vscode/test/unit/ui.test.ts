import { beforeEach, describe, expect, it, vi } from 'vitest';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { commands, fake, ProgressLocation, ThemeColor, Uri, workspace } from '../fake/vscode';
import { proposedDocuments, showMessageRequestModal } from '../../src/approvals';
import { BarrierProgress, TICK_MS, type ProgressHost } from '../../src/progress';
import { BudgetStatusBar } from '../../src/statusBar';
import type { Budget } from '../../src/protocol';

beforeEach(() => fake.reset());

const budget: Budget = {
  effectiveTokens: 12400, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'estimated', autoCompact: true, pending: [], state: 'idle', lastCompaction: null, cachedTokens: 0,
  display: '12.4k / 48.8k (25%)',
};

describe('BudgetStatusBar', () => {
  it('reads "SOBA 12.4k / 48.8k (25%)", colours the item from the soft limit on and clicks through to Show Budget (R-O1)', () => {
    const bar = new BudgetStatusBar();
    bar.setConnected(true);
    const item = fake.statusItems[0];
    bar.setBudget(budget);
    expect(item.text).toBe('SOBA 12.4k / 48.8k (25%)');
    expect(item.backgroundColor).toBeUndefined();
    expect(item.command).toBe('soba-vscode.showBudget');
    bar.setBudget({ ...budget, effectiveTokens: 39046 });
    expect((item.backgroundColor as ThemeColor).id).toBe('statusBarItem.warningBackground');
    bar.setBudget({ ...budget, effectiveTokens: 48000 });
    expect((item.backgroundColor as ThemeColor).id).toBe('statusBarItem.errorBackground');
  });

  it('shows the barrier and drops it when the budget says the state moved on', () => {
    const bar = new BudgetStatusBar();
    bar.setConnected(true);
    const item = fake.statusItems[0];
    bar.setBudget({ ...budget, state: 'compacting' });
    bar.setBarrier({ operationId: 'op', trigger: 'user', percentage: 82 });
    expect(item.text).toBe('$(sync~spin) SOBA compacting');
    bar.setBudget(budget);
    expect(item.text).toBe('SOBA 12.4k / 48.8k (25%)');
  });

  it('points to the output when the server is not running', () => {
    const bar = new BudgetStatusBar();
    bar.setConnected(false);
    expect(fake.statusItems[0].command).toBe('soba-vscode.showOutput');
  });
});

describe('approvals are modal (window/showMessageRequest)', () => {
  const params = {
    type: 2,
    message: 'SOBA wants to run bash\ncommand:\necho checking build status[300 spaces]; rm -rf ~/important',
    actions: [{ title: 'Deny' }, { title: 'Allow once' }, { title: 'Allow for session' }],
  };

  it('shows a modal with the three choices, the whole command as detail, and returns the chosen action (R-W3)', async () => {
    fake.answers.message.push((_m: string, items: { title: string }[]) => items[2]);
    const r = await showMessageRequestModal(params);
    expect(r).toEqual({ title: 'Allow for session' });
    expect(fake.messages[0]).toMatchObject({ level: 'warning', modal: true, message: 'SOBA wants to run bash' });
    expect(fake.messages[0].detail).toBe('command:\necho checking build status[300 spaces]; rm -rf ~/important');
    // Deny is the first ordinary button, which VS Code makes the focused primary: Enter denies. No button is
    // the close affordance, so VS Code adds a Cancel that answers nothing (Deny to the server).
    expect(fake.messages[0].items).toEqual([{ title: 'Deny' }, { title: 'Allow once' }, { title: 'Allow for session' }]);
  });

  it('puts Deny first whatever order the server sent (Enter must not allow)', async () => {
    fake.answers.message.push((_m: string, items: { title: string }[]) => items[0]);
    const r = await showMessageRequestModal({ ...params, actions: [{ title: 'Allow once' }, { title: 'Allow for session' }, { title: 'Deny' }] });
    expect(r).toEqual({ title: 'Deny' });
    expect(fake.messages[0].items).toEqual([{ title: 'Deny' }, { title: 'Allow once' }, { title: 'Allow for session' }]);
  });

  // The server names what an allow for the session covers (soba.scope, and the action's title): the
  // dialog shows that title as its button and answers it as offered, for each scope.
  it.each([
    ['write_file', 'file edits', 'Allow file edits for this session'],
    ['bash', 'bash commands', 'Allow bash commands for this session'],
    ['mcp__github__create_issue', 'the tools of MCP server "github"', 'Allow the tools of MCP server "github" for this session'],
  ])('the allow for the session of %s says it covers %s (R-W3)', async (tool, scope, title) => {
    fake.answers.message.push((_m: string, items: { title: string }[]) => items[2]);
    const r = await showMessageRequestModal({
      type: 2,
      message: `SOBA wants to run ${tool}\narguments:\n{}`,
      actions: [{ title: 'Deny' }, { title: 'Allow once' }, { title }],
      soba: { tool, scope },
    });
    expect(r).toEqual({ title });
    expect((fake.messages[0].items as { title: string }[]).map((i) => i.title)).toEqual(['Deny', 'Allow once', title]);
  });

  it('a write opens a diff of the file against the proposed content before asking (R-W3)', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-diff-'));
    fs.mkdirSync(path.join(root, 'src'));
    fs.writeFileSync(path.join(root, 'src', 'a.go'), 'package a\n');
    const opened: unknown[][] = [];
    const reg = commands.registerCommand('vscode.diff', (...args: unknown[]) => opened.push(args));
    workspace.workspaceFolders = [{ uri: Uri.file(root) }];
    try {
      const proposed = 'package a\n\nfunc A() {}\n';
      await showMessageRequestModal({
        type: 2,
        message: 'SOBA wants to run write_file\nwrite src/a.go (23 bytes):\n' + proposed,
        actions: [{ title: 'Deny' }, { title: 'Allow once' }, { title: 'Allow for session' }],
        soba: { tool: 'write_file', path: 'src/a.go', proposed },
      });
      expect(opened).toHaveLength(1);
      const [left, right, title] = opened[0] as [{ scheme: string; fsPath: string }, Uri, string];
      expect(left).toMatchObject({ scheme: 'file', fsPath: path.join(root, 'src', 'a.go') });
      // A read-only document, not an "Untitled" buffer that asks to be saved when closed.
      expect(right.scheme).toBe('soba-proposed');
      expect(right.path.endsWith('/src/a.go')).toBe(true);
      expect(proposedDocuments.provideTextDocumentContent(right as never)).toBe(proposed);
      expect(fake.documents).toEqual([]);
      expect(title).toBe('SOBA proposes: src/a.go');
      expect(fake.messages[0]).toMatchObject({ modal: true, message: 'SOBA wants to run write_file' });
    } finally {
      reg.dispose();
      workspace.workspaceFolders = undefined;
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a write of a new file diffs an empty read-only document against the proposal (R-W3)', async () => {
    const opened: unknown[][] = [];
    const reg = commands.registerCommand('vscode.diff', (...args: unknown[]) => opened.push(args));
    try {
      await showMessageRequestModal({ ...params, soba: { tool: 'write_file', path: 'new.go', proposed: 'package n\n' } });
      const [left, right] = opened[0] as [Uri, Uri];
      expect([left.scheme, right.scheme]).toEqual(['soba-proposed', 'soba-proposed']);
      expect(proposedDocuments.provideTextDocumentContent(left as never)).toBe('');
      expect(proposedDocuments.provideTextDocumentContent(right as never)).toBe('package n\n');
    } finally {
      reg.dispose();
    }
  });

  it('a dismissed dialog answers null (the server denies)', async () => {
    expect(await showMessageRequestModal(params)).toBeNull();
  });
});

/** progressHost delivers $/progress values a test sends and records cancels. */
function progressHost() {
  const handlers = new Map<string | number, (v: unknown) => void>();
  const cancels: unknown[] = [];
  const host: ProgressHost = {
    onProgress: (_type, token, handler) => {
      handlers.set(token, handler as (v: unknown) => void);
      return { dispose: () => handlers.delete(token) };
    },
    sendNotification: (_type, params) => {
      cancels.push(params);
    },
  };
  return { host, cancels, send: (token: string, v: unknown) => handlers.get(token)?.(v), handlers };
}

describe('BarrierProgress: $/progress as a cancellable notification', () => {
  it('is indeterminate with the server message and the elapsed time until the percentage really moves, then fills (R-B3)', async () => {
    const p = progressHost();
    const ends: string[] = [];
    let now = 1_000_000;
    const bp = new BarrierProgress(() => p.host, (m) => ends.push(m), () => now);
    expect(bp.create({ token: 'tok1' })).toBeNull();
    p.send('tok1', { kind: 'begin', title: 'Compacting context', cancellable: true, percentage: 1, message: 'waiting for the summary model' });
    await Promise.resolve();
    now += 12_400;
    p.send('tok1', { kind: 'report', percentage: 1 });
    now += 600;
    p.send('tok1', { kind: 'report', percentage: 40 });
    now += 1000;
    p.send('tok1', { kind: 'report', percentage: 82, message: 'checking the capsule' });
    p.send('tok1', { kind: 'end', message: 'Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1' });
    await new Promise((r) => setTimeout(r, 0));
    const shown = fake.progress[0];
    expect(shown).toMatchObject({ title: 'Compacting context', location: ProgressLocation.Notification, cancellable: true, done: true });
    expect(shown.reports).toEqual([
      { message: 'waiting for the summary model · 0 s' },
      { message: 'waiting for the summary model · 12 s' },
      { message: 'waiting for the summary model · 40% · 13 s', increment: 40 },
      { message: 'checking the capsule · 82% · 14 s', increment: 42 },
    ]);
    expect(ends).toEqual(['Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1']);
    expect(p.handlers.size).toBe(0);
  });

  it("says the elapsed time once when the server's message carries its own (issue: '· 2 s · 2 s')", async () => {
    const p = progressHost();
    let now = 0;
    const bp = new BarrierProgress(() => p.host, () => {}, () => now);
    bp.create({ token: 't2' });
    p.send('t2', { kind: 'begin', title: 'Compacting context', cancellable: true, message: 'waiting for the summary model · 0 s' });
    await Promise.resolve();
    now += 2_000;
    p.send('t2', { kind: 'report', message: 'waiting for the summary model · 2 s' });
    now += 63_000;
    p.send('t2', { kind: 'report', message: 'summarizing · 640 tokens · 1 min 05 s' });
    p.send('t2', { kind: 'end' });
    await new Promise((r) => setTimeout(r, 0));
    expect(fake.progress[0].reports.map((r) => r.message)).toEqual([
      'waiting for the summary model · 0 s',
      'waiting for the summary model · 2 s',
      'summarizing · 640 tokens · 1 min 05 s',
    ]);
  });

  it('ticks the elapsed time every second while nothing arrives, and stops at the end', async () => {
    vi.useFakeTimers();
    try {
      const p = progressHost();
      let now = 0;
      const bp = new BarrierProgress(() => p.host, () => {}, () => now);
      bp.create({ token: 't' });
      p.send('t', { kind: 'begin', title: 'Compacting context', cancellable: true });
      await Promise.resolve();
      for (let i = 0; i < 3; i++) {
        now += TICK_MS;
        vi.advanceTimersByTime(TICK_MS);
      }
      expect(fake.progress[0].reports.map((r) => r.message)).toEqual(['waiting · 0 s', 'waiting · 1 s', 'waiting · 2 s', 'waiting · 3 s']);
      p.send('t', { kind: 'end' });
      vi.advanceTimersByTime(5 * TICK_MS);
      expect(fake.progress[0].reports).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('cancelling the notification sends window/workDoneProgress/cancel with the token', async () => {
    const p = progressHost();
    const bp = new BarrierProgress(() => p.host);
    bp.create({ token: 'tok2' });
    p.send('tok2', { kind: 'begin', title: 'Compacting context before response', cancellable: true });
    await Promise.resolve();
    fake.progress[0].cancel();
    expect(p.cancels).toEqual([{ token: 'tok2' }]);
  });
});
