import * as fs from 'fs';
import * as path from 'path';
import { beforeEach, describe, expect, it } from 'vitest';
import { fake, window, Uri } from '../fake/vscode';
import { guarded, PaletteCommand, paletteHandlers, registerPaletteCommands, type CommandContext } from '../../src/commands';
import { SERVER_COMMANDS, ServerCommand, type Budget, type ServerCommandId } from '../../src/protocol';
import { SidebarModel } from '../../src/sidebar/model';

const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));

const budget: Budget = {
  effectiveTokens: 100, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'estimated', autoCompact: true, pending: [], state: 'idle', lastCompaction: null,
};

/** recordingContext answers each server command from `answers` and records what was sent. */
function recordingContext(answers: Partial<Record<ServerCommandId, unknown>>) {
  const sent: { command: string; args: object }[] = [];
  const output = window.createOutputChannel('SOBA');
  const budgets: Budget[] = [];
  const ctx: CommandContext = {
    server: {
      async execute<T>(command: ServerCommandId, args: object) {
        sent.push({ command, args });
        if (!(command in answers)) throw Object.assign(new Error(`not available yet: ${command}`), { code: -32803 });
        return answers[command] as T;
      },
    },
    output,
    model: new SidebarModel(),
    changed: () => {},
    status: { setBudget: (b) => budgets.push(b) },
    workspaceRoot: () => '/ws',
    fileExists: (f) => f === '/ws/exists.capsule.md',
  };
  return { ctx, sent, output, budgets };
}

const compaction = {
  operationId: 'op1', trigger: 'user', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870, reclaimedTokens: 30340,
  reclaimedRatio: 0.67, checkpointId: 'ck_8f2a1c', quality: 'full', durationMs: 800, reason: '',
  line: 'Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c',
};

const answers: Partial<Record<ServerCommandId, unknown>> = {
  [ServerCommand.prompt]: { turnId: 't1', queued: false },
  [ServerCommand.cancel]: { cancelled: true, what: 'turn' },
  [ServerCommand.budget]: budget,
  [ServerCommand.compact]: compaction,
  [ServerCommand.autoCompact]: { ...budget, autoCompact: false },
  [ServerCommand.checkpoint]: { checkpointId: 'ck_m1' },
  [ServerCommand.capsuleCreate]: { checkpointId: 'ck_c1', path: '.soba/capsules/ck_c1-handoff.capsule.md' },
  [ServerCommand.capsuleList]: [{ checkpointId: 'ck_c1', trigger: 'user', title: 'handoff', quality: 'full', createdAt: '2025-01-01T00:00:00Z' }],
  [ServerCommand.capsuleExport]: { path: '/ws/out.capsule.md' },
  [ServerCommand.capsuleLoad]: { checkpointId: 'ck_l1', title: 'loaded', warnings: ['file changed since export'] },
  [ServerCommand.capsuleShow]: { checkpointId: 'ck_c1', markdown: '# Capsule\n\n## Files read\n- `a.go`\n\n## Files modified\n- b.go\n' },
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
    [PaletteCommand.ask, () => fake.answers.inputBox.push('  add a test '), [{ command: 'soba.prompt', args: { text: 'add a test' } }]],
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
      () => fake.answers.quickPick.push((items: any[]) => items[0]),
      [
        { command: 'soba.session.list', args: {} },
        { command: 'soba.session.info', args: {} },
        { command: 'soba.session.resume', args: { sessionId: 's1' } },
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
    [PaletteCommand.rewindSession, () => fake.answers.inputBox.push(' e3 '), [{ command: 'soba.session.rewind', args: { entryId: 'e3' } }]],
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
    expect(sent).toEqual([]);
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

  it('show latest capsule opens the Markdown in an editor tab and reads its file lists', async () => {
    const { ctx } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.showLatestCapsule]();
    expect(fake.documents).toEqual([{ language: 'markdown', content: (answers['soba.capsule.show'] as any).markdown }]);
    expect(fake.shownDocuments).toHaveLength(1);
    const snap = ctx.model.snapshot();
    expect(snap.filesRead).toEqual(['a.go']);
    expect(snap.filesModified).toEqual(['b.go']);
  });

  it('list capsules writes one line per checkpoint to the output and says so', async () => {
    const { ctx, output } = recordingContext(answers);
    await paletteHandlers(ctx)[PaletteCommand.listCapsules]();
    expect((output as any).lines).toEqual(['SOBA: 1 checkpoint, newest first:', '  ck_c1 · user · full · 2025-01-01T00:00:00Z · "handoff"']);
    expect((output as any).shown).toBe(1);
    expect(fake.messages[0]).toMatchObject({ level: 'info', message: 'SOBA: 1 checkpoint, newest first (listed in the SOBA output)' });
  });

  it('list sessions marks the current session', async () => {
    const { ctx, output } = recordingContext({ ...answers, [ServerCommand.sessionInfo]: { sessionId: 's1', path: 'p', flightPath: 'f', leafId: 'e4', entries: 4 } });
    await paletteHandlers(ctx)[PaletteCommand.listSessions]();
    expect((output as any).lines).toEqual(['SOBA: 1 session, most recent first:', '  s1 · 4 entries · 2025 · p · current']);
  });

  it('an empty list says so without opening the output', async () => {
    const { ctx, output } = recordingContext({ ...answers, [ServerCommand.capsuleList]: [] });
    await paletteHandlers(ctx)[PaletteCommand.listCapsules]();
    expect((output as any).shown).toBe(0);
    expect(fake.messages[0].message).toBe('SOBA: no checkpoints yet. Create a capsule or compact first.');
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

describe('slash commands typed in SOBA: Ask run the palette handlers (docs/slash-commands.md)', () => {
  const ask = (ctx: CommandContext, text: string) => guarded(PaletteCommand.ask, paletteHandlers(ctx)[PaletteCommand.ask], ctx.output)(text);

  type Case = [string, () => void, { command: string; args: object }[]];
  const cases: Case[] = [
    ['/budget', () => {}, [{ command: 'soba.budget', args: {} }]],
    ['/compact', () => {}, [{ command: 'soba.compact', args: {} }]],
    ['/compact keep the API decisions', () => {}, [{ command: 'soba.compact', args: { instructions: 'keep the API decisions' } }]],
    ['/auto-compact on', () => {}, [{ command: 'soba.autoCompact', args: { enabled: true } }]],
    ['/auto-compact off', () => {}, [{ command: 'soba.autoCompact', args: { enabled: false } }]],
    ['/milestone parser done', () => {}, [{ command: 'soba.checkpoint', args: { kind: 'milestone', note: 'parser done' } }]],
    ['/pivot switch to SAX', () => {}, [{ command: 'soba.checkpoint', args: { kind: 'plan_pivot', note: 'switch to SAX' } }]],
    ['/capsule', () => {}, [{ command: 'soba.capsule.show', args: {} }]],
    ['/capsule show ck_c1', () => {}, [{ command: 'soba.capsule.show', args: { checkpointId: 'ck_c1' } }]],
    ['/capsule list', () => {}, [{ command: 'soba.capsule.list', args: {} }]],
    ['/capsule create "handoff auth work"', () => {}, [{ command: 'soba.capsule.create', args: { title: 'handoff auth work' } }]],
    ['/capsule export ck_abc ./handoff.capsule.md', () => {}, [{ command: 'soba.capsule.export', args: { checkpointId: 'ck_abc', path: '/ws/handoff.capsule.md' } }]],
    ['/capsule export ck_1 /ws/exists.capsule.md', () => {}, [{ command: 'soba.capsule.export', args: { checkpointId: 'ck_1', path: '/ws/exists.capsule.md' } }]],
    ['/capsule export ck_1 exists.capsule.md --overwrite', () => {}, [{ command: 'soba.capsule.export', args: { checkpointId: 'ck_1', path: '/ws/exists.capsule.md', overwrite: true } }]],
    ['/capsule load ./handoff.capsule.md', () => {}, [{ command: 'soba.capsule.load', args: { path: '/ws/handoff.capsule.md' } }]],
    ['/cancel', () => {}, [{ command: 'soba.cancel', args: {} }]],
    ['/session new', () => {}, [{ command: 'soba.session.new', args: {} }]],
    ['/session info', () => {}, [{ command: 'soba.session.info', args: {} }]],
    ['/session list', () => {}, [{ command: 'soba.session.list', args: {} }, { command: 'soba.session.info', args: {} }]],
    ['/session resume s1', () => {}, [{ command: 'soba.session.resume', args: { sessionId: 's1' } }]],
    [
      '/session resume',
      () => fake.answers.quickPick.push((items: any[]) => items[0]),
      [
        { command: 'soba.session.list', args: {} },
        { command: 'soba.session.info', args: {} },
        { command: 'soba.session.resume', args: { sessionId: 's1' } },
      ],
    ],
    ['/rewind e3', () => {}, [{ command: 'soba.session.rewind', args: { entryId: 'e3' } }]],
    ['/usr/bin is missing', () => {}, [{ command: 'soba.prompt', args: { text: '/usr/bin is missing' } }]],
    ['//compact means what?', () => {}, [{ command: 'soba.prompt', args: { text: '/compact means what?' } }]],
  ];

  it.each(cases)('%s', async (text, prepare, want) => {
    const { ctx, sent } = recordingContext(answers);
    prepare();
    const r = await ask(ctx, text);
    expect(sent).toStrictEqual(want);
    expect(r).toBeDefined();
    // A slash command asks for nothing the palette would not ask: no input box, no dialogs.
    expect(fake.asked.inputBox).toEqual([]);
    expect(fake.asked.saveDialog).toEqual([]);
    expect(fake.asked.openDialog).toEqual([]);
  });

  it('covers every slash command of docs/slash-commands.md except /help', () => {
    const words = new Set(cases.map(([t]) => t.split(' ').slice(0, t.startsWith('/capsule') || t.startsWith('/session') ? 2 : 1).join(' ')));
    for (const w of ['/budget', '/compact', '/auto-compact', '/milestone', '/pivot', '/capsule', '/capsule show', '/capsule list', '/capsule create', '/capsule export', '/capsule load', '/cancel', '/session new', '/session info', '/session list', '/session resume', '/rewind']) {
      expect(words.has(w), w).toBe(true);
    }
  });

  it.each([
    ['/budget', PaletteCommand.showBudget, []],
    ['/auto-compact off', PaletteCommand.autoCompactOff, []],
    ['/compact', PaletteCommand.compact, ['']],
    ['/milestone parser done', PaletteCommand.markMilestone, ['parser done']],
    ['/capsule create handoff', PaletteCommand.createCapsule, ['handoff']],
    ['/capsule', PaletteCommand.showLatestCapsule, []],
    ['/session info', PaletteCommand.showSessionInfo, []],
  ])('%s shows its result exactly as the palette command does', async (text, id, args) => {
    const palette = recordingContext(answers);
    await paletteHandlers(palette.ctx)[id](...args);
    const fromPalette = { messages: fake.messages, lines: (palette.output as any).lines, docs: fake.documents, sidebar: palette.ctx.model.snapshot(), budgets: palette.budgets };
    fake.reset();
    const typed = recordingContext(answers);
    await ask(typed.ctx, text);
    const sidebar = typed.ctx.model.snapshot();
    // The one difference: the typed command stands in the conversation.
    expect(sidebar.stream[0]).toStrictEqual({ turnId: '', kind: 'status', text: `› ${text}` });
    sidebar.stream = sidebar.stream.slice(1);
    const fromSlash = { messages: fake.messages, lines: (typed.output as any).lines, docs: fake.documents, sidebar, budgets: typed.budgets };
    expect(fromSlash).toStrictEqual(fromPalette);
    expect(typed.sent).toStrictEqual(palette.sent);
  });

  it('a slash command that fails is shown as the palette command failing', async () => {
    const { ctx } = recordingContext({});
    await expect(ask(ctx, '/budget')).resolves.toBeUndefined();
    expect(fake.messages[0]).toMatchObject({ level: 'error', message: 'SOBA: showBudget failed: not available yet: soba.budget (-32803)' });
  });

  it('/help lists the commands in the SOBA output and sends nothing', async () => {
    const { ctx, sent, output } = recordingContext(answers);
    await ask(ctx, '/help');
    expect(sent).toEqual([]);
    const lines: string[] = (output as any).lines;
    expect(lines[0]).toMatch(/^SOBA slash commands/);
    expect(lines.some((l) => l.includes('/capsule export <checkpointId> <path> [--overwrite]'))).toBe(true);
    expect((output as any).shown).toBe(1);
  });

  it.each([
    ['/capsule export ck_abc', 'SOBA: /capsule export: missing <path> · usage: /capsule export <checkpointId> <path> [--overwrite]'],
    ['/auto-compact maybe', 'SOBA: /auto-compact: expected on or off, not "maybe" · usage: /auto-compact on|off'],
    ['/etc is missing', 'SOBA: unknown command /etc · /help lists the commands; //etc sends /etc to the model'],
  ])('%s is an error message and nothing is sent', async (text, message) => {
    const { ctx, sent, output } = recordingContext(answers);
    await expect(ask(ctx, text)).resolves.toBeUndefined();
    expect(sent).toEqual([]);
    expect(fake.messages).toEqual([{ level: 'error', message, modal: false, detail: undefined, items: [] }]);
    expect((output as any).lines).toEqual([message]);
    expect(ctx.model.snapshot().stream).toEqual([]);
  });

  it('a slash command typed in the Ask input box runs too', async () => {
    const { ctx, sent } = recordingContext(answers);
    fake.answers.inputBox.push('/auto-compact off');
    await paletteHandlers(ctx)[PaletteCommand.ask]();
    expect(sent).toStrictEqual([{ command: 'soba.autoCompact', args: { enabled: false } }]);
  });

  it('a command stands in the conversation as a status line, not as a user message to the model', async () => {
    const { ctx } = recordingContext(answers);
    await ask(ctx, '  /budget ');
    expect(ctx.model.snapshot().stream).toStrictEqual([{ turnId: '', kind: 'status', text: '› /budget' }]);
  });

  it('a bad command is not added to the conversation', async () => {
    const { ctx } = recordingContext(answers);
    await ask(ctx, '/capsule export ck_1');
    expect(ctx.model.snapshot().stream).toStrictEqual([]);
  });
});

describe('the shared slash-command cases both front ends pass (testdata/slash-commands.json)', () => {
  const shared = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../../testdata/slash-commands.json'), 'utf8')) as {
    cases: { text: string; sends?: { command: string; args: object }; prompt?: string; error?: boolean }[];
  };
  const ask = (ctx: CommandContext, text: string) => guarded(PaletteCommand.ask, paletteHandlers(ctx)[PaletteCommand.ask], ctx.output)(text);

  it('has cases', () => expect(shared.cases.length).toBeGreaterThan(20));

  it.each(shared.cases)('$text', async (c) => {
    const { ctx, sent } = recordingContext(answers);
    await ask(ctx, c.text);
    if (c.error) {
      expect(sent).toStrictEqual([]);
      expect(fake.messages.some((m) => m.level === 'error')).toBe(true);
    } else if (c.prompt !== undefined) {
      expect(sent[0]).toStrictEqual({ command: 'soba.prompt', args: { text: c.prompt } });
    } else {
      expect(sent[0]).toStrictEqual(c.sends);
    }
  });
});
