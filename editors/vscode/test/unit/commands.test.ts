import * as fs from 'fs';
import * as path from 'path';
import { beforeEach, describe, expect, it } from 'vitest';
import { fake, window, workspace, Uri } from '../fake/vscode';
import { CAPSULE_SCHEME, CapsuleDocuments } from '../../src/capsules';
import { guarded, loadOlder, PaletteCommand, paletteHandlers, registerPaletteCommands, type CommandContext } from '../../src/commands';
import { renderSidebar } from '../../src/sidebar/render';
import { SERVER_COMMANDS, ServerAddition, ServerCommand, type Budget, type ServerCommandId } from '../../src/protocol';
import { SidebarModel } from '../../src/sidebar/model';

const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));

const budget: Budget = {
  effectiveTokens: 100, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'estimated', autoCompact: true, pending: [], state: 'idle', lastCompaction: null, cachedTokens: 0,
  display: '100 / 48.8k (0%)',
};

/**
 * recordingContext answers each server command from `answers` (a value, or a
 * function of the arguments) and records what was sent.
 */
function recordingContext(answers: Partial<Record<ServerCommandId, unknown>>) {
  const sent: { command: string; args: object }[] = [];
  const output = window.createOutputChannel('SOBA');
  const budgets: Budget[] = [];
  const ctx: CommandContext = {
    server: {
      async execute<T>(command: ServerCommandId, args: object) {
        sent.push({ command, args });
        if (!(command in answers)) throw Object.assign(new Error(`not available yet: ${command}`), { code: -32803 });
        const a = answers[command];
        return (typeof a === 'function' ? a(args) : a) as T;
      },
    },
    output,
    model: new SidebarModel(),
    changed: () => {},
    status: { setBudget: (b) => budgets.push(b) },
    workspaceRoot: () => '/ws',
    fileExists: (f) => f === '/ws/exists.capsule.md',
    capsules: undefined as never,
    now: () => Date.parse('2025-01-01T00:00:42Z'),
  };
  const capsules = new CapsuleDocuments(ctx.server);
  workspace.registerTextDocumentContentProvider(CAPSULE_SCHEME, capsules);
  ctx.capsules = capsules;
  return { ctx, sent, output, budgets };
}

const compaction = {
  operationId: 'op1', trigger: 'user', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870, reclaimedTokens: 30340,
  reclaimedRatio: 0.67, checkpointId: 'ck_8f2a1c', quality: 'full', durationMs: 800, reason: '',
  line: 'Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c',
};

const answers: Partial<Record<ServerCommandId, unknown>> = {
  [ServerCommand.prompt]: { turnId: 't1', queued: false },
  [ServerCommand.run]: { kind: 'prompt', turnId: 't1', queued: false, text: 'hi' },
  [ServerCommand.cancel]: { cancelled: true, what: 'turn' },
  [ServerCommand.budget]: budget,
  [ServerCommand.compact]: compaction,
  [ServerCommand.autoCompact]: { ...budget, autoCompact: false },
  [ServerCommand.checkpoint]: { checkpointId: 'ck_m1' },
  [ServerCommand.capsuleCreate]: { checkpointId: 'ck_c1', path: '.soba/capsules/ck_c1-handoff.capsule.md' },
  [ServerCommand.capsuleList]: [{ checkpointId: 'ck_c1', trigger: 'user', title: 'handoff', quality: 'full', createdAt: '2025-01-01T00:00:00Z' }],
  [ServerCommand.capsuleExport]: { path: '/ws/out.capsule.md' },
  [ServerCommand.capsuleLoad]: { checkpointId: 'ck_l1', title: 'loaded', warnings: ['file changed since export'] },
  [ServerCommand.capsuleShow]: { checkpointId: 'ck_c1', markdown: '---\ncheckpointId: ck_c1\nsha256: 9f2c\n---\n\n# Capsule\n\n## Files read\n- `a.go`\n\n## Files modified\n- b.go\n' },
  [ServerCommand.sessionNew]: { sessionId: 's2', path: '.soba/sessions/s2.jsonl' },
  [ServerCommand.sessionList]: [{ sessionId: 's1', path: 'p', updatedAt: '2025', entries: 4 }],
  [ServerCommand.sessionInfo]: { sessionId: 's2', path: 'p', flightPath: 'f', leafId: 'e9', entries: 2 },
  [ServerCommand.sessionResume]: { sessionId: 's1', path: 'p', leafId: 'e4' },
  [ServerCommand.sessionRewind]: { leafId: 'e10' },
};

beforeEach(() => fake.reset());

describe('palette commands build the server arguments from the prompts', () => {
  type Case = [string, () => void, { command: string; args: object }[]];
  const cases: Case[] = [
    [PaletteCommand.ask, () => fake.answers.inputBox.push('  add a test '), [{ command: 'soba.run', args: { text: 'add a test' } }]],
    [PaletteCommand.cancel, () => {}, [{ command: 'soba.cancel', args: {} }]],
    [PaletteCommand.showBudget, () => {}, [{ command: 'soba.budget', args: {} }]],
    [PaletteCommand.compact, () => fake.answers.inputBox.push(''), [{ command: 'soba.compact', args: {} }]],
    [PaletteCommand.autoCompactOn, () => {}, [{ command: 'soba.autoCompact', args: { enabled: true } }]],
    [PaletteCommand.autoCompactOff, () => {}, [{ command: 'soba.autoCompact', args: { enabled: false } }]],
    [PaletteCommand.markMilestone, () => fake.answers.inputBox.push('parser done'), [{ command: 'soba.checkpoint', args: { kind: 'milestone', note: 'parser done' } }]],
    [PaletteCommand.markPlanPivot, () => fake.answers.inputBox.push('switch to SAX'), [{ command: 'soba.checkpoint', args: { kind: 'plan_pivot', note: 'switch to SAX' } }]],
    [PaletteCommand.createCapsule, () => fake.answers.inputBox.push('handoff'), [{ command: 'soba.capsule.create', args: { title: 'handoff' } }]],
    [
      PaletteCommand.exportCapsule,
      () => {
        fake.answers.quickPick.push((items: any[]) => items[0]);
        fake.answers.saveDialog.push(Uri.file('/ws/out.capsule.md'));
      },
      [
        { command: 'soba.capsule.list', args: {} },
        { command: 'soba.capsule.export', args: { checkpointId: 'ck_c1', path: '/ws/out.capsule.md' } },
      ],
    ],
    [PaletteCommand.loadCapsule, () => fake.answers.openDialog.push([Uri.file('/ws/in.capsule.md')]), [{ command: 'soba.capsule.load', args: { path: '/ws/in.capsule.md' } }]],
    [PaletteCommand.showLatestCapsule, () => {}, [{ command: 'soba.capsule.show', args: {} }]],
    [PaletteCommand.newSession, () => {}, [{ command: 'soba.session.new', args: {} }]],
    [
      PaletteCommand.resumeSession,
      () => fake.answers.quickPick.push((items: any[]) => items[1]),
      [
        { command: 'soba.session.list', args: {} },
        { command: 'soba.session.info', args: {} },
        { command: 'soba.session.resume', args: { sessionId: 's1' } },
        { command: 'soba.session.transcript', args: { limit: 60 } },
        { command: 'soba.session.history', args: {} },
      ],
    ],
    [PaletteCommand.showSessionInfo, () => {}, [{ command: 'soba.session.info', args: {} }]],
    [PaletteCommand.listCapsules, () => {}, [{ command: 'soba.capsule.list', args: {} }]],
    [
      PaletteCommand.listSessions,
      () => {},
      [
        { command: 'soba.session.list', args: {} },
        { command: 'soba.session.info', args: {} },
      ],
    ],
    [
      PaletteCommand.rewindSession,
      () => fake.answers.inputBox.push(' e3 '),
      [
        { command: 'soba.session.history', args: {} },
        { command: 'soba.session.rewind', args: { entryId: 'e3' } },
      ],
    ],
  ];

  it.each(cases)('%s', async (id, prepare, want) => {
    const { ctx, sent } = recordingContext(answers);
    prepare();
    const r = await paletteHandlers(ctx)[id]();
    expect(sent).toStrictEqual(want);
    expect(r).toBeDefined();
  });

  it('covers every palette command of package.json', () => {
    const tested = new Set(cases.map((c) => c[0]));
    const palette = Object.values(PaletteCommand);
    expect([...tested].sort()).toEqual([...palette].sort());
  });

  it('a dismissed prompt sends nothing', async () => {
    const { ctx, sent } = recordingContext(answers);
    for (const id of [PaletteCommand.ask, PaletteCommand.compact, PaletteCommand.markMilestone, PaletteCommand.createCapsule, PaletteCommand.loadCapsule, PaletteCommand.rewindSession]) {
      expect(await paletteHandlers(ctx)[id]()).toBeUndefined();
    }
    // Only reads: the rewind picker's points.
    expect(sent.filter((x) => x.command !== 'soba.session.history')).toEqual([]);
  });

  it('export asks to overwrite only through the save dialog: an existing file gets overwrite: true', async () => {
    const { ctx, sent } = recordingContext(answers);
    fake.answers.quickPick.push((items: any[]) => items[0]);
    fake.answers.saveDialog.push(Uri.file('/ws/exists.capsule.md'));
    await paletteHandlers(ctx)[PaletteCommand.exportCapsule]();
    expect(sent[1]).toStrictEqual({ command: 'soba.capsule.export', args: { checkpointId: 'ck_c1', path: '/ws/exists.capsule.md', overwrite: true } });
    const dialog = fake.asked.saveDialog[0] as { defaultUri: Uri };
    expect(dialog.defaultUri.fsPath).toBe('/ws/ck_c1-handoff.capsule.md');
  });

  it('export with a path from a caller never overwrites an existing file unless told to', async () => {
    const { ctx, sent } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.exportCapsule]('ck_c1', '/ws/exists.capsule.md');
    expect(sent).toStrictEqual([{ command: 'soba.capsule.export', args: { checkpointId: 'ck_c1', path: '/ws/exists.capsule.md' } }]);
  });

  it('compact with focus instructions sends them', async () => {
    const { ctx, sent } = recordingContext(answers);
    fake.answers.inputBox.push('keep the failing test names');
    await paletteHandlers(ctx)[PaletteCommand.compact]();
    expect(sent).toStrictEqual([{ command: 'soba.compact', args: { instructions: 'keep the failing test names' } }]);
  });
});

/** A session's rewind points (soba.session.history) and a chat showing its two requests. */
const history = [
  { entryId: 'u1', kind: 'user', text: 'read the notes', createdAt: '2025-01-01T00:00:00Z', rewindTo: 'h0', filesModifiedAfter: ['a.go', 'b.go'] },
  { entryId: 'k1', kind: 'checkpoint', text: 'milestone: notes read', createdAt: '2025-01-01T00:00:10Z', rewindTo: 'k1', filesModifiedAfter: ['b.go'] },
  { entryId: 'u2', kind: 'user', text: 'fix b.go', createdAt: '2025-01-01T00:00:20Z', rewindTo: 'a1', filesModifiedAfter: ['b.go'] },
];
function chat(ctx: CommandContext) {
  ctx.model.applyUserPrompt('t1', 'read the notes');
  ctx.model.applyEvent({ turnId: 't1', type: 'text', delta: 'They are notes.' });
  ctx.model.applyUserPrompt('t2', 'fix b.go');
  ctx.model.applyEvent({ turnId: 't2', type: 'text', delta: 'Fixed.' });
}
const texts = (ctx: CommandContext) => ctx.model.snapshot().stream.map((i) => (i.kind === 'user' || i.kind === 'assistant' ? i.text : i.kind));

describe('palette commands render their results', () => {
  it('compact writes the R-B3 line to the SOBA output once and shows it', async () => {
    const { ctx, output } = recordingContext(answers);
    fake.answers.inputBox.push('');
    await paletteHandlers(ctx)[PaletteCommand.compact]();
    expect((output as any).lines).toEqual([compaction.line]);
    expect(fake.messages.map((m) => m.message)).toContain(compaction.line);
    expect(ctx.model.snapshot().compactions[0].checkpointId).toBe('ck_8f2a1c');
  });

  it('show budget updates the status bar and shows the summary', async () => {
    const { ctx, budgets } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.showBudget]();
    expect(budgets).toHaveLength(1);
    expect(fake.messages[0].message).toMatch(/^SOBA budget · 100 \/ 48,808 tokens/);
  });

  it('show latest capsule opens a read-only soba-capsule: Markdown document without the front matter, and reads its file lists', async () => {
    const { ctx } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.showLatestCapsule]();
    // No Markdown extension in the fake: the document itself opens (in VS Code, its preview).
    expect(fake.documents).toEqual([{ uri: Uri.from({ scheme: 'soba-capsule', path: '/ck_c1.capsule.md' }), language: 'markdown', content: '# Capsule\n\n## Files read\n- `a.go`\n\n## Files modified\n- b.go\n' }]);
    expect(fake.shownDocuments).toHaveLength(1);
    const snap = ctx.model.snapshot();
    expect(snap.filesRead).toEqual(['a.go']);
    expect(snap.filesModified).toEqual(['b.go']);
  });

  it('list capsules is a picker (title, trigger, time to the second, quality) that opens the one picked', async () => {
    const { ctx, sent } = recordingContext(answers);
    fake.answers.quickPick.push((items: unknown[]) => items[0]);
    await paletteHandlers(ctx)[PaletteCommand.listCapsules]();
    expect(fake.asked.quickPick[0]).toMatchObject([{ label: 'handoff', description: 'user · 42 s ago · full', detail: 'ck_c1' }]);
    expect(sent.map((x) => x.command)).toEqual(['soba.capsule.list', 'soba.capsule.show']);
    expect(sent[1].args).toEqual({ checkpointId: 'ck_c1' });
    expect(fake.documents[0].uri?.toString()).toBe('soba-capsule:///ck_c1.capsule.md');
  });

  it('list sessions marks the current session and names each by its first request', async () => {
    const list = [
      { sessionId: 's1', path: 'p', updatedAt: '2025-01-02T00:00:00Z', entries: 4, title: '', bytes: 10 },
      { sessionId: 's0', path: 'q', updatedAt: '2025-01-01T00:00:00Z', entries: 9, title: 'fix the login bug', bytes: 90 },
    ];
    const { ctx, output } = recordingContext({ ...answers, [ServerCommand.sessionList]: list, [ServerCommand.sessionInfo]: { sessionId: 's1', path: 'p', flightPath: 'f', leafId: 'e4', entries: 4 } });
    await paletteHandlers(ctx)[PaletteCommand.listSessions]();
    expect((output as any).lines).toEqual([
      'SOBA: 2 sessions, most recent first:',
      '  s1 · 4 entries · 2025-01-02T00:00:00Z · p · current',
      '  s0 · "fix the login bug" · 9 entries · 2025-01-01T00:00:00Z · q',
    ]);
  });

  it('an empty list says so without opening the output', async () => {
    const { ctx, output } = recordingContext({ ...answers, [ServerCommand.capsuleList]: [] });
    await paletteHandlers(ctx)[PaletteCommand.listCapsules]();
    expect((output as any).shown).toBe(0);
    expect(fake.messages[0].message).toBe('SOBA: no capsules yet. Compact or create a capsule first.');
  });

  it('rewind picks from the current path (text, time to the second, files after), confirms that files are not reverted, and keeps the history before (R-T4)', async () => {
    const { ctx, sent } = recordingContext({ ...answers, [ServerAddition.sessionHistory]: history });
    chat(ctx);
    fake.answers.quickPick.push((items: { value: { entryId: string } }[]) => items.find((i) => i.value.entryId === 'u2'));
    fake.answers.message.push('Rewind');
    await paletteHandlers(ctx)[PaletteCommand.rewindSession]();
    expect(fake.asked.quickPick[0]).toMatchObject([
      { label: '$(comment) fix b.go', description: '22 s ago', detail: '1 file modified after this, not reverted: b.go' },
      { label: '$(bookmark) milestone: notes read', description: '32 s ago' },
      { label: '$(comment) read the notes', description: '42 s ago', detail: '2 files modified after this, not reverted: a.go, b.go' },
    ]);
    expect(fake.messages[0]).toMatchObject({ level: 'warning', modal: true, message: 'Rewind the session to before “fix b.go”?', items: ['Rewind'] });
    expect(fake.messages[0].detail).toContain('Files are not reverted. Modified after that point and left as they are:\n• b.go');
    expect(sent.map((x) => x.command)).toEqual(['soba.session.history', 'soba.session.rewind']);
    expect(sent[1].args).toEqual({ entryId: 'a1' });
    expect(texts(ctx)).toEqual(['read the notes', 'They are notes.']);
    expect(fake.messages[1].message).toBe('SOBA: rewound the session to before “fix b.go” · files not reverted: b.go');
  });

  it('"Rewind to here" on a chat message goes to that message; declining the confirmation changes nothing', async () => {
    const { ctx, sent } = recordingContext({ ...answers, [ServerAddition.sessionHistory]: history });
    chat(ctx);
    const first = ctx.model.userMessages()[0];
    await paletteHandlers(ctx)[PaletteCommand.rewindSession]({ userKey: first.key });
    expect(fake.asked.quickPick).toEqual([]);
    expect(fake.messages[0].message).toBe('Rewind the session to before “read the notes”?');
    expect(fake.messages[0].detail).toContain('• a.go\n• b.go');
    expect(sent.map((x) => x.command)).toEqual(['soba.session.history']);
    expect(texts(ctx)).toHaveLength(4);
    fake.answers.message.push('Rewind');
    await paletteHandlers(ctx)[PaletteCommand.rewindSession]({ userKey: first.key });
    expect(sent[2]).toEqual({ command: 'soba.session.rewind', args: { entryId: 'h0' } });
    expect(texts(ctx)).toEqual([]);
  });

  it('the session picker offers New session first, then sessions by title, updated time and size', async () => {
    const list = [
      { sessionId: 's1', path: 'a', updatedAt: '2025-01-01T00:00:02Z', entries: 40, title: 'fix the login bug', bytes: 12_600 },
      { sessionId: 's2', path: 'b', updatedAt: '2024-12-31T23:00:00Z', entries: 1, title: '', bytes: 300 },
    ];
    const { ctx, sent } = recordingContext({ ...answers, [ServerCommand.sessionList]: list, [ServerAddition.sessionHistory]: history });
    fake.answers.quickPick.push((items: unknown[]) => items[1]);
    await paletteHandlers(ctx)[PaletteCommand.resumeSession]();
    expect(fake.asked.quickPick[0]).toMatchObject([
      { label: '$(add) New session' },
      { label: 'fix the login bug', description: 'updated 40 s ago · 40 entries · 12.3 KB', detail: 's1' },
      { label: '(no request yet)', description: 'updated 1 h 0 min ago · 1 entry · 300 B · current', detail: 's2' },
    ]);
    // A server without soba.session.transcript: the earlier requests are listed instead.
    expect(sent.map((x) => x.command)).toEqual(['soba.session.list', 'soba.session.info', 'soba.session.resume', 'soba.session.transcript', 'soba.session.history']);
    // The reopened session's requests are in the chat, each can be rewound to.
    expect(texts(ctx)).toEqual(['status', 'read the notes', 'fix b.go']);
    fake.reset();
    const t = recordingContext({ ...answers, [ServerCommand.sessionList]: list });
    fake.answers.quickPick.push((items: unknown[]) => items[0]);
    await paletteHandlers(t.ctx)[PaletteCommand.resumeSession]();
    expect(t.sent.map((x) => x.command)).toEqual(['soba.session.list', 'soba.session.info', 'soba.session.new']);
  });

  it('rewind forgets the conversation shown so far and names the new leaf', async () => {
    const { ctx } = recordingContext(answers);
    ctx.model.applyUserPrompt('t1', 'old question');
    await paletteHandlers(ctx)[PaletteCommand.rewindSession]('e3');
    expect(ctx.model.snapshot().stream).toEqual([]);
    expect(fake.messages[0].message).toBe('SOBA: rewound the session to e3 · leaf e10');
  });

  it('load capsule shows each warning', async () => {
    const { ctx } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.loadCapsule]('/ws/in.capsule.md');
    expect(fake.messages.filter((m) => m.level === 'warning').map((m) => m.message)).toEqual(['SOBA: file changed since export']);
  });

  it('a failed command is an error message naming the command, not a rejection', async () => {
    const { ctx, output } = recordingContext({});
    const h = guarded(PaletteCommand.showBudget, paletteHandlers(ctx)[PaletteCommand.showBudget], output);
    await expect(h()).resolves.toBeUndefined();
    expect(fake.messages[0]).toMatchObject({ level: 'error', message: 'SOBA: showBudget failed: not available yet: soba.budget (-32803)' });
  });

  it('a bad input is a warning and sends nothing', async () => {
    const { ctx, sent, output } = recordingContext(answers);
    fake.answers.inputBox.push('   ');
    await guarded(PaletteCommand.ask, paletteHandlers(ctx)[PaletteCommand.ask], output)();
    expect(sent).toEqual([]);
    expect(fake.messages[0]).toMatchObject({ level: 'warning', message: 'SOBA: the prompt is empty' });
  });
});

describe('command IDs: declared once, never registered twice', () => {
  const declared: string[] = pkg.contributes.commands.map((c: { command: string }) => c.command);

  it('registers exactly the soba-vscode.* palette commands of package.json, none of the server IDs', () => {
    const { ctx } = recordingContext(answers);
    registerPaletteCommands(ctx);
    const registered = [...fake.commands.keys()];
    for (const id of registered) expect(SERVER_COMMANDS).not.toContain(id);
    const wrappers = declared.filter((c) => c.startsWith('soba-vscode.') && !['soba-vscode.restartServer', 'soba-vscode.showOutput'].includes(c));
    expect(registered.sort()).toEqual(wrappers.sort());
  });

  it('every palette command is in category SOBA', () => {
    for (const c of pkg.contributes.commands.filter((c: any) => c.command.startsWith('soba-vscode.'))) expect(c.category).toBe('SOBA');
  });

  it('declares every server command for keybindings and hides it from the palette', () => {
    const hidden = new Set(pkg.contributes.menus.commandPalette.filter((m: any) => m.when === 'false').map((m: any) => m.command));
    for (const id of SERVER_COMMANDS) {
      expect(declared).toContain(id);
      expect(hidden.has(id)).toBe(true);
    }
    const declaredServer = declared.filter((c) => !c.startsWith('soba-vscode.'));
    expect(declaredServer.sort()).toEqual([...SERVER_COMMANDS].sort());
  });
});

describe('what is typed in SOBA: Ask goes to the server as typed through soba.run (docs/slash-commands.md)', () => {
  const ask = (ctx: CommandContext, text: string) => guarded(PaletteCommand.ask, paletteHandlers(ctx)[PaletteCommand.ask], ctx.output)(text);
  /** ran is soba.run's answer for a slash command that ran `command`. */
  const ran = (command: ServerCommandId, result: unknown, lines: string[]) => ({ [ServerCommand.run]: { kind: 'command', command, result, lines } });

  it('a typed prompt goes through soba.run and starts a turn', async () => {
    const { ctx, sent, output } = recordingContext({ [ServerCommand.run]: { kind: 'prompt', turnId: 't7', queued: false, text: 'add a test for the parser' } });
    const r = await ask(ctx, '  add a test for the parser ');
    expect(sent).toStrictEqual([{ command: 'soba.run', args: { text: 'add a test for the parser' } }]);
    expect(r).toStrictEqual({ kind: 'prompt', turnId: 't7', queued: false, text: 'add a test for the parser' });
    expect(ctx.model.snapshot().stream).toMatchObject([{ turnId: 't7', kind: 'user', text: 'add a test for the parser' }]);
    expect((output as any).lines).toEqual(['SOBA: asked · t7']);
  });

  it('a typed slash command goes through soba.run and its lines are shown in the output and the conversation', async () => {
    const line = 'session s2 · 2 entries · leaf e9 · p';
    const { ctx, sent, output } = recordingContext(ran(ServerCommand.sessionInfo, answers[ServerCommand.sessionInfo], [line]));
    await ask(ctx, '/session info');
    expect(sent).toStrictEqual([{ command: 'soba.run', args: { text: '/session info' } }]);
    expect((output as any).lines).toEqual([line]);
    expect(fake.messages).toMatchObject([{ level: 'info', message: `SOBA: ${line}` }]);
    // The command stands in the conversation as status lines, not as a user message to the model.
    expect(ctx.model.snapshot().stream).toMatchObject([
      { turnId: '', kind: 'status', text: '› /session info' },
      { turnId: '', kind: 'status', text: line },
    ]);
  });

  it('several lines (/help) are written to the output and revealed, without a message', async () => {
    const help = ['SOBA slash commands:', '  /help    lists these commands and their usage'];
    const { ctx, output } = recordingContext({ [ServerCommand.run]: { kind: 'command', lines: help } });
    await ask(ctx, '/help');
    expect((output as any).lines).toEqual(help);
    expect((output as any).shown).toBe(1);
    expect(fake.messages).toEqual([]);
  });

  it('a slash command typed wrong is an error message; nothing else changes', async () => {
    const msg = '/capsule export: missing <path> · usage: /capsule export <checkpointId> <path> [--overwrite]';
    const { ctx, output, budgets } = recordingContext({ [ServerCommand.run]: { kind: 'command', lines: [msg], error: msg } });
    await ask(ctx, '/capsule export ck_1');
    expect(fake.messages).toEqual([{ level: 'error', message: `SOBA: ${msg}`, modal: false, detail: undefined, items: [] }]);
    expect((output as any).lines).toEqual([`SOBA: ${msg}`]);
    expect(ctx.model.snapshot().stream).toMatchObject([
      { turnId: '', kind: 'status', text: '› /capsule export ck_1' },
      { turnId: '', kind: 'error', text: msg },
    ]);
    expect(budgets).toEqual([]);
  });

  it("a command's result updates what only the editor shows: status bar, capsule tab, compactions, a new session", async () => {
    let t = recordingContext(ran(ServerCommand.budget, budget, ['budget · 100 / 48,808 tokens']));
    await ask(t.ctx, '/budget');
    expect(t.budgets).toStrictEqual([budget]);
    expect(t.ctx.model.snapshot().budget).toStrictEqual(budget);

    fake.reset();
    const show = answers[ServerCommand.capsuleShow] as { checkpointId: string; markdown: string };
    t = recordingContext(ran(ServerCommand.capsuleShow, show, ['capsule ck_c1:', '# Capsule', '', '## Files read', '- `a.go`']));
    await ask(t.ctx, '/capsule');
    expect(fake.documents).toMatchObject([{ language: 'markdown', content: show.markdown.slice(show.markdown.indexOf('# Capsule')) }]);
    expect((t.output as any).lines).toEqual(['capsule ck_c1:']);
    expect(t.ctx.model.snapshot().filesRead).toEqual(['a.go']);

    fake.reset();
    t = recordingContext(ran(ServerCommand.compact, compaction, [compaction.line]));
    t.ctx.model.applyUserPrompt('t1', 'old question');
    await ask(t.ctx, '/compact');
    // Written once, whether the result or the soba/compaction end comes first.
    expect((t.output as any).lines).toEqual([compaction.line]);
    expect(t.ctx.model.snapshot().compactions[0].checkpointId).toBe('ck_8f2a1c');

    fake.reset();
    t = recordingContext(ran(ServerCommand.sessionNew, answers[ServerCommand.sessionNew], ['new session s2 · .soba/sessions/s2.jsonl']));
    t.ctx.model.applyUserPrompt('t1', 'old question');
    await ask(t.ctx, '/session new');
    expect(t.ctx.model.snapshot().stream.map((i) => (i.kind === 'status' ? i.text : i.kind))).toEqual(['› /session new', 'new session s2 · .soba/sessions/s2.jsonl']);
  });

  it('/session resume typed in the chat lists the resumed session\'s requests, as at start', async () => {
    const t = recordingContext({
      ...ran(ServerCommand.sessionResume, answers[ServerCommand.sessionResume], ['resumed session s1 at e4']),
      [ServerAddition.sessionHistory]: [{ entryId: 'u1', kind: 'user', text: 'fix the login bug', createdAt: '2025-01-01T00:00:00Z', rewindTo: 'h0', filesModifiedAfter: [] }],
    });
    t.ctx.model.applyUserPrompt('t9', 'from the other session');
    await ask(t.ctx, '/session resume s1');
    expect(t.ctx.model.snapshot().stream.map((i) => (i.kind === 'user' || i.kind === 'status' ? `${i.kind}: ${i.text}` : i.kind))).toEqual([
      'status: Earlier in this session: 1 request (the answers are in the transcript)',
      'user: fix the login bug',
      'status: › /session resume s1',
      'status: resumed session s1 at e4',
    ]);
  });

  // R-T4: /rewind <id> typed in the chat keeps the conversation before that point on screen, as the picker
  // does; an id that is no rewind point lists the requests the path still holds, as on resume.
  it.each([
    ['/rewind a1', ['user: read the notes', 'assistant: They are notes.', 'status: › /rewind a1', 'status: rewound to a1']],
    ['/rewind h0', ['status: › /rewind h0', 'status: rewound to h0']],
    ['/rewind k1', ['user: read the notes', 'assistant: They are notes.', 'status: › /rewind k1', 'status: rewound to k1']],
    ['/rewind e77', ['status: Earlier in this session: 1 request (the answers are in the transcript)', 'user: read the notes', 'status: › /rewind e77', 'status: rewound to e77']],
    // A request's own id keeps the request on the path without its answer: listed as the path holds it.
    ['/rewind u1', ['status: Earlier in this session: 1 request (the answers are in the transcript)', 'user: read the notes', 'status: › /rewind u1', 'status: rewound to u1']],
  ])('%s typed in the chat keeps what the path still holds (R-T4)', async (typed, want) => {
    const id = typed.split(' ')[1];
    let calls = 0;
    const t = recordingContext({
      ...ran(ServerCommand.sessionRewind, { leafId: 'e99' }, [`rewound to ${id}`]),
      // Before the rewind the whole path; after it (e77 an entry of the first answer, u1 the first request) the first request.
      [ServerAddition.sessionHistory]: () => (calls++ === 0 ? history : history.slice(0, 1)),
    });
    chat(t.ctx);
    await ask(t.ctx, typed);
    expect(t.sent[0]).toEqual({ command: 'soba.session.history', args: {} });
    expect(t.sent[1]).toEqual({ command: 'soba.run', args: { text: typed } });
    expect(t.ctx.model.snapshot().stream.map((i) => (i.kind === 'user' || i.kind === 'status' || i.kind === 'assistant' ? `${i.kind}: ${i.text}` : i.kind))).toEqual(want);
  });

  it('/rewind alone lists the points and changes nothing in the chat', async () => {
    const t = recordingContext({ [ServerCommand.run]: { kind: 'command', command: ServerAddition.sessionHistory, result: history, lines: ['3 points to rewind to, most recent first'] } });
    chat(t.ctx);
    await ask(t.ctx, '/rewind');
    expect(t.sent.map((x) => x.command)).toEqual(['soba.run']);
    expect(texts(t.ctx)).toEqual(['read the notes', 'They are notes.', 'fix b.go', 'Fixed.', 'status', 'status']);
  });

  it('a slash command typed in the Ask input box goes the same way', async () => {
    const { ctx, sent } = recordingContext(ran(ServerCommand.autoCompact, { ...budget, autoCompact: false }, ['auto-compact is off (the hard limit still compacts)']));
    fake.answers.inputBox.push('/auto-compact off');
    await paletteHandlers(ctx)[PaletteCommand.ask]();
    expect(sent).toStrictEqual([{ command: 'soba.run', args: { text: '/auto-compact off' } }]);
    expect(fake.messages[0].message).toBe('SOBA: auto-compact is off (the hard limit still compacts)');
  });
});


describe('a reopened session shows its conversation from soba.session.transcript, newest page first', () => {
  const at = '2025-01-01T00:00:00Z';
  const pages: Record<string, unknown> = {
    '': {
      leafId: 'e9',
      before: 'e5',
      items: [
        { entryId: 'e5', kind: 'compaction', text: 'Compacted', createdAt: at, compaction: { checkpointId: 'ck_1', trigger: 'user', tokensBefore: 9000, tokensAfter: 1200, quality: 'full' } },
        { entryId: 'e6', kind: 'user', text: 'write the notes', createdAt: at },
        {
          entryId: 'e7',
          kind: 'tool',
          text: '',
          createdAt: at,
          tool: { id: 'c1', name: 'write_file', arguments: { path: 'notes.md', content: 'x\n' }, ok: true, summary: 'wrote 1 line', approval: 'once', filesModified: ['notes.md'] },
        },
        { entryId: 'e9', kind: 'assistant', text: 'Wrote **notes.md**.', createdAt: at },
      ],
    },
    e5: { leafId: 'e9', before: '', items: [{ entryId: 'e1', kind: 'user', text: 'the first request', createdAt: at }, { entryId: 'e2', kind: 'assistant', text: 'The first answer.', createdAt: at }] },
  };
  const transcript = (args: { before?: string }) => pages[args.before ?? ''];

  it('resume shows the newest page: the request, the answer, the tool card with its approval, the compaction marker; scrolling up loads the older page', async () => {
    const list = [{ sessionId: 's1', path: 'a', updatedAt: at, entries: 9, title: 'the first request', bytes: 900 }];
    const { ctx, sent } = recordingContext({
      [ServerCommand.sessionList]: list,
      [ServerCommand.sessionResume]: { sessionId: 's1', path: 'a', leafId: 'e9' },
      [ServerAddition.sessionTranscript]: transcript,
    });
    fake.answers.quickPick.push((items: unknown[]) => items[1]);
    await paletteHandlers(ctx)[PaletteCommand.resumeSession]();
    expect(sent.filter((x) => x.command === 'soba.session.transcript')).toEqual([{ command: 'soba.session.transcript', args: { limit: 60 } }]);
    const snap = ctx.model.snapshot();
    expect(snap.stream.map((s) => s.kind)).toEqual(['compaction', 'user', 'tool', 'assistant']);
    expect(snap.older).toBe('more');
    expect(snap.filesModified).toEqual(['notes.md']);
    const html = renderSidebar(snap, (t) => `<p>${t}</p>`, Date.parse(at));
    expect(html).toContain('Earlier history compacted</span> · <button class="link" data-action="capsule"');
    expect(html).toContain('View capsule');
    expect(html).toContain('Write notes.md (1 line)');
    expect(html).toContain('· allowed once');
    expect(html).toContain('Wrote **notes.md**.');
    expect(html).toContain('data-testid="older" data-older="more"');

    await loadOlder(ctx);
    expect(sent.at(-1)).toEqual({ command: 'soba.session.transcript', args: { before: 'e5', limit: 60 } });
    const after = ctx.model.snapshot();
    expect(after.stream.map((s) => (s.kind === 'user' || s.kind === 'assistant' ? s.text : s.kind))).toEqual([
      'the first request',
      'The first answer.',
      'compaction',
      'write the notes',
      'tool',
      'Wrote **notes.md**.',
    ]);
    expect(after.older).toBeUndefined(); // the session's beginning is shown
    await loadOlder(ctx); // nothing older: nothing asked
    expect(sent.filter((x) => x.command === 'soba.session.transcript')).toHaveLength(2);
  });

  it('an older page that cannot be read any more (the session was rewound) stops the loading and says why in the output', async () => {
    const { ctx, output } = recordingContext({ [ServerAddition.sessionTranscript]: (a: { before?: string }) => (a.before ? Promise.reject(new Error('no entry "e5" on the session\'s current path')) : pages['']) });
    ctx.model.applyTranscript(pages[''] as never, false);
    await loadOlder(ctx);
    expect(ctx.model.snapshot().older).toBeUndefined();
    expect((output as unknown as { lines: string[] }).lines.join('\n')).toContain('earlier messages could not be loaded');
  });
});
