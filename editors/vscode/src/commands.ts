// The command palette (category "SOBA"). Each command asks the user what it
// needs, builds the server command's argument (args.ts), runs it through the
// ServerLink and renders the result: a line in the SOBA output channel, a
// message, an editor tab, the status bar and the sidebar. What the user types
// to the agent (SOBA: Ask, the sidebar's prompt box) goes to the server as
// typed through soba.run, which owns the slash-command grammar; the extension
// shows the lines it answers. The server's own
// command IDs (soba.*) are registered by vscode-languageclient from
// executeCommandProvider.commands; these are the extension's wrappers, with
// IDs of their own (soba-vscode.*), so nothing is registered twice.
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ArgumentError,
  autoCompactArgs,
  capsuleCreateArgs,
  capsuleExportArgs,
  capsuleLoadArgs,
  capsulePickItems,
  capsuleShowArgs,
  checkpointArgs,
  compactArgs,
  historyPickItems,
  sessionPickItems,
  sessionResumeArgs,
  runArgs,
  sessionRewindArgs,
  suggestedCapsuleName,
  type CheckpointKind,
  type PickItem,
} from './args';
import { budgetSummary, compactionMarkerText, outcomeWords, sessionListLines } from './format';
import {
  ServerAddition,
  ServerCommand,
  type Budget,
  type CancelResult,
  type CapsuleCreateResult,
  type CapsuleExportResult,
  type CapsuleListItem,
  type CapsuleLoadResult,
  type CapsuleShowResult,
  type CheckpointResult,
  type CompactionResult,
  type RunCommandResult,
  type RunResult,
  type SessionInfo,
  type SessionListItem,
  type SessionNewResult,
  type SessionResumeResult,
  type SessionRewindResult,
  type HistoryPoint,
  type SessionTranscript,
} from './protocol';
import { errorMessage, type ServerLink } from './server';
import type { SidebarModel } from './sidebar/model';

/** Extension command IDs of the palette. */
export const PaletteCommand = {
  ask: 'soba-vscode.ask',
  cancel: 'soba-vscode.cancel',
  showBudget: 'soba-vscode.showBudget',
  compact: 'soba-vscode.compact',
  autoCompactOn: 'soba-vscode.autoCompactOn',
  autoCompactOff: 'soba-vscode.autoCompactOff',
  markMilestone: 'soba-vscode.markMilestone',
  markPlanPivot: 'soba-vscode.markPlanPivot',
  createCapsule: 'soba-vscode.createCapsule',
  exportCapsule: 'soba-vscode.exportCapsule',
  loadCapsule: 'soba-vscode.loadCapsule',
  showLatestCapsule: 'soba-vscode.showLatestCapsule',
  listCapsules: 'soba-vscode.listCapsules',
  newSession: 'soba-vscode.newSession',
  resumeSession: 'soba-vscode.resumeSession',
  showSessionInfo: 'soba-vscode.showSessionInfo',
  listSessions: 'soba-vscode.listSessions',
  rewindSession: 'soba-vscode.rewindSession',
} as const;

/** OutputLike is the part of vscode.OutputChannel the commands write to. */
export interface OutputLike {
  appendLine(line: string): void;
  show(preserveFocus?: boolean): void;
}

/** CommandContext is everything a palette command touches besides vscode.window. */
export interface CommandContext {
  server: ServerLink;
  output: OutputLike;
  model: SidebarModel;
  /** changed re-renders the sidebar after the model changed. */
  changed(): void;
  status: { setBudget(b: Budget): void };
  workspaceRoot(): string | undefined;
  fileExists(file: string): boolean;
  /** capsules shows capsules as read-only documents. */
  capsules: { show(checkpointId?: string): Promise<CapsuleShowResult>; open(r: CapsuleShowResult): Promise<CapsuleShowResult> };
  /** now is the clock of relative times in pickers (a test sets it). */
  now?: () => number;
}

/** Handler runs one palette command; optional arguments skip the prompts (sidebar, keybindings, tests). */
export type Handler = (...args: unknown[]) => Promise<unknown>;

/**
 * ResultLog writes each compaction's result line to the output once, whether
 * it arrives as the soba.compact result or as the soba/compaction end.
 */
export class ResultLog {
  private seen = new Set<string>();
  constructor(private readonly output: OutputLike) {}

  write(r: Partial<CompactionResult>): boolean {
    const id = r.operationId;
    if (id) {
      if (this.seen.has(id)) return false;
      this.seen.add(id);
      if (this.seen.size > 200) this.seen.delete(this.seen.values().next().value as string);
    }
    let line = r.line ?? '';
    if (line === '') return false;
    // R-F1: the user must see that the capsule is the local fallback.
    if (r.quality === 'degraded' && !/degraded|fallback/i.test(line)) line += ' (degraded fallback)';
    this.output.appendLine(line);
    return true;
  }
}

const resultLogs = new WeakMap<OutputLike, ResultLog>();

/** SHOW_CAPSULE is the action of a completed compaction's notification. */
export const SHOW_CAPSULE = 'Show capsule';

/**
 * ResultNotice shows each compaction's result once as a notification,
 * whether it arrives as the soba.compact result or as the soba/compaction
 * end: a completed one as the server's whole result line with "Show
 * capsule"; one that did not complete in words (R-B4), as a warning when it
 * failed or went stale. A skipped or cancelled soft compaction is only
 * logged: the user did not ask for it and nothing changed.
 */
export class ResultNotice {
  private seen = new Set<string>();

  announce(r: Partial<CompactionResult>): boolean {
    const id = r.operationId;
    if (id) {
      if (this.seen.has(id)) return false;
      this.seen.add(id);
      if (this.seen.size > 200) this.seen.delete(this.seen.values().next().value as string);
    }
    const outcome = r.outcome ?? '';
    if (outcome === 'completed') {
      let line = r.line || compactionMarkerText(r);
      if (r.quality === 'degraded' && !/degraded|fallback/i.test(line)) line += ' (degraded fallback)';
      const actions = r.checkpointId ? [SHOW_CAPSULE] : [];
      void vscode.window.showInformationMessage(line, ...actions).then((c) => {
        if (c === SHOW_CAPSULE) void vscode.commands.executeCommand(PaletteCommand.showLatestCapsule, r.checkpointId);
      });
      return true;
    }
    if (outcome === 'failed' || outcome === 'stale') {
      void vscode.window.showWarningMessage(outcomeWords(r));
      return true;
    }
    if (r.trigger === 'user' && outcome !== '') {
      void vscode.window.showInformationMessage(outcomeWords(r));
      return true;
    }
    return false;
  }
}

const resultNotices = new WeakMap<OutputLike, ResultNotice>();

/** resultNoticeFor returns the one ResultNotice of an output channel (one per extension instance). */
export function resultNoticeFor(output: OutputLike): ResultNotice {
  let n = resultNotices.get(output);
  if (!n) {
    n = new ResultNotice();
    resultNotices.set(output, n);
  }
  return n;
}

/** resultLogFor returns the one ResultLog of an output channel. */
export function resultLogFor(output: OutputLike): ResultLog {
  let log = resultLogs.get(output);
  if (!log) {
    log = new ResultLog(output);
    resultLogs.set(output, log);
  }
  return log;
}

/** paletteHandlers builds the handler of every palette command. */
export function paletteHandlers(ctx: CommandContext): Record<string, Handler> {
  const { server, output, model } = ctx;
  const log = resultLogFor(output);
  const notice = resultNoticeFor(output);
  const info = (msg: string) => {
    output.appendLine(msg);
    void vscode.window.showInformationMessage(msg);
  };
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  /** listed writes what was listed and its lines to the output, reveals it, and says so. */
  const listed = (what: string, lines: string[]) => {
    output.appendLine(`SOBA: ${what}${lines.length > 0 ? ':' : ''}`);
    for (const l of lines) output.appendLine(`  ${l}`);
    if (lines.length > 0) output.show(true);
    void vscode.window.showInformationMessage(`SOBA: ${what}${lines.length > 0 ? ' (listed in the SOBA output)' : ''}`);
  };

  const budget = async (b: Budget) => {
    ctx.status.setBudget(b);
    model.applyBudget(b);
    ctx.changed();
  };

  const checkpoint = async (kind: CheckpointKind, noteArg: unknown) => {
    const label = kind === 'milestone' ? 'milestone' : 'plan pivot';
    const note =
      str(noteArg) ??
      (await vscode.window.showInputBox({
        title: `SOBA: Mark ${kind === 'milestone' ? 'Milestone' : 'Plan Pivot'}`,
        prompt: `What was reached or changed? The next preflight compacts at this ${label}.`,
        placeHolder: 'note (optional)',
      }));
    if (note === undefined) return undefined;
    const r = await server.execute<CheckpointResult>(ServerCommand.checkpoint, checkpointArgs(kind, note));
    info(`SOBA: marked ${label} · ${r.checkpointId}`);
    return r;
  };

  /**
   * ran shows what soba.run answered for a slash command: its lines in the
   * SOBA output and in the sidebar's conversation, under the typed command,
   * and an error message when it was typed wrong. The result also updates
   * what only the editor shows: the status bar, the sidebar's compactions and
   * files, the capsule as a Markdown tab. `/session resume` without an id
   * answers the session list and how to resume one, shown as lines like any
   * other; the palette's SOBA: Resume Session keeps its quick pick.
   */
  const ran = async (typed: string, r: RunCommandResult, before?: HistoryPoint[]) => {
    if (r.error !== undefined) {
      const msg = `SOBA: ${r.error}`;
      output.appendLine(msg);
      model.applyCommand(typed, [r.error], true);
      ctx.changed();
      void vscode.window.showErrorMessage(msg);
      return;
    }
    const lines = r.lines ?? [];
    // What the output and the sidebar show; a capsule shows as its own tab.
    let shown = lines;
    switch (r.command) {
      case ServerCommand.budget:
      case ServerCommand.autoCompact:
        await budget(r.result as Budget);
        break;
      case ServerCommand.compact: {
        const c = r.result as CompactionResult;
        model.applyResult(c);
        // The same line may arrive first as the soba/compaction end: once.
        log.write(c);
        notice.announce(c);
        shown = [];
        break;
      }
      case ServerCommand.capsuleShow: {
        const c = r.result as CapsuleShowResult;
        model.applyCapsuleMarkdown(c.markdown);
        shown = lines.slice(0, 1);
        await ctx.capsules.open(c);
        break;
      }
      case ServerCommand.sessionNew:
        // The conversation shown so far is not the session's any more.
        model.reset();
        break;
      case ServerCommand.sessionRewind: {
        // As the picker's rewind: the conversation before the point stays on screen. An id that is no
        // rewind point (any entry) leaves it unknown: the path's requests are listed as on resume.
        const id = rewindIdOf(typed);
        const point = pointRewoundTo(before, id);
        if (point) {
          keepHistory(model, point, before);
        } else {
          model.reset();
          await showTranscript(ctx);
        }
        break;
      }
      case ServerCommand.sessionResume:
        model.reset();
        // A resumed session's conversation is shown, as at start.
        await showTranscript(ctx);
        break;
    }
    model.applyCommand(typed, shown);
    ctx.changed();
    if (r.command !== ServerCommand.compact) for (const l of shown) output.appendLine(l);
    if (shown.length > 1) output.show(true);
    else if (shown.length === 1) {
      void vscode.window.showInformationMessage(`SOBA: ${shown[0]}`);
    }
  };

  const handlers: Record<string, Handler> = {
    [PaletteCommand.ask]: async (textArg) => {
      const typed =
        str(textArg) ??
        (await vscode.window.showInputBox({
          title: 'SOBA: Ask',
          prompt: 'Ask the agent, or type a slash command (/help lists them)',
          placeHolder: 'e.g. add a test for the parser',
        }));
      if (typed === undefined) return undefined;
      const args = runArgs(typed);
      // A typed /rewind <id>: the points before it, to know what the chat keeps (see ran).
      const before = rewindIdOf(args.text) ? await server.execute<HistoryPoint[]>(ServerAddition.sessionHistory, {}).catch(() => undefined) : undefined;
      const r = await server.execute<RunResult>(ServerCommand.run, args);
      if (r.kind === 'command') {
        await ran(args.text, r, before);
        return r;
      }
      model.applyUserPrompt(r.turnId, r.text ?? args.text);
      ctx.changed();
      output.appendLine(r.queued ? `SOBA: queued ${r.turnId}: it runs after the current turn or compaction` : `SOBA: asked · ${r.turnId}`);
      return r;
    },

    [PaletteCommand.cancel]: async () => {
      const r = await server.execute<CancelResult>(ServerCommand.cancel, {});
      info(r.cancelled ? `SOBA: cancelled the ${r.what}` : 'SOBA: nothing to cancel');
      return r;
    },

    [PaletteCommand.showBudget]: async () => {
      const b = await server.execute<Budget>(ServerCommand.budget, {});
      await budget(b);
      info(budgetSummary(b));
      return b;
    },

    [PaletteCommand.compact]: async (instructionsArg) => {
      const instructions =
        str(instructionsArg) ??
        (await vscode.window.showInputBox({
          title: 'SOBA: Compact Context',
          prompt: 'Optional focus instructions for the summary (Enter for none)',
          placeHolder: 'e.g. keep the failing test names and the API decisions',
        }));
      if (instructions === undefined) return undefined;
      const r = await server.execute<CompactionResult>(ServerCommand.compact, compactArgs(instructions));
      model.applyResult(r);
      ctx.changed();
      log.write(r);
      notice.announce({ ...r, trigger: r.trigger || 'user' });
      return r;
    },

    [PaletteCommand.autoCompactOn]: async () => {
      const b = await server.execute<Budget>(ServerCommand.autoCompact, autoCompactArgs(true));
      await budget(b);
      info(`SOBA: auto-compact is ${b.autoCompact ? 'on' : 'off'}`);
      return b;
    },

    [PaletteCommand.autoCompactOff]: async () => {
      const b = await server.execute<Budget>(ServerCommand.autoCompact, autoCompactArgs(false));
      await budget(b);
      info(`SOBA: auto-compact is ${b.autoCompact ? 'on' : 'off'} (the hard limit still compacts)`);
      return b;
    },

    [PaletteCommand.markMilestone]: (note) => checkpoint('milestone', note),
    [PaletteCommand.markPlanPivot]: (note) => checkpoint('plan_pivot', note),

    [PaletteCommand.createCapsule]: async (titleArg) => {
      const title = str(titleArg) ?? (await vscode.window.showInputBox({ title: 'SOBA: Create Capsule', prompt: 'Capsule title', placeHolder: 'e.g. parser refactor handoff' }));
      if (title === undefined) return undefined;
      const r = await server.execute<CapsuleCreateResult>(ServerCommand.capsuleCreate, capsuleCreateArgs(title));
      const file = absolute(r.path, ctx.workspaceRoot());
      output.appendLine(`SOBA: created capsule ${r.checkpointId} · ${file}`);
      void vscode.window.showInformationMessage(`SOBA: created capsule ${r.checkpointId}`, 'Open').then((c) => {
        if (c === 'Open') void vscode.window.showTextDocument(vscode.Uri.file(file));
      });
      return r;
    },

    // overwriteArg (from /capsule export … --overwrite) decides alone; the
    // palette's save dialog has already asked about an existing file.
    [PaletteCommand.exportCapsule]: async (checkpointArg, pathArg, overwriteArg) => {
      let checkpointId = str(checkpointArg);
      let title = '';
      if (!checkpointId) {
        const list = await server.execute<CapsuleListItem[]>(ServerCommand.capsuleList, {});
        if (list.length === 0) {
          void vscode.window.showInformationMessage('SOBA: no checkpoints yet. Create a capsule or compact first.');
          return undefined;
        }
        const pick = await vscode.window.showQuickPick(capsulePickItems(list, ctx.now?.()), { title: 'SOBA: Export Capsule', placeHolder: 'Capsule to export', matchOnDescription: true, matchOnDetail: true });
        if (!pick) return undefined;
        checkpointId = pick.value.checkpointId;
        title = pick.value.title;
      }
      let target = str(pathArg);
      if (!target) {
        const root = ctx.workspaceRoot();
        const name = suggestedCapsuleName({ checkpointId, title });
        const uri = await vscode.window.showSaveDialog({
          title: 'SOBA: Export Capsule',
          defaultUri: root ? vscode.Uri.file(path.join(root, name)) : undefined,
          filters: { 'SOBA capsule': ['capsule.md', 'md'] },
          saveLabel: 'Export',
        });
        if (!uri) return undefined;
        target = uri.fsPath;
      }
      const file = absolute(target, ctx.workspaceRoot());
      // Only the save dialog has asked the user about an existing file; a
      // path given by a caller never replaces one unless overwrite says so.
      const overwrite = typeof overwriteArg === 'boolean' ? overwriteArg : !pathArg && ctx.fileExists(file);
      const r = await server.execute<CapsuleExportResult>(ServerCommand.capsuleExport, capsuleExportArgs(checkpointId, file, overwrite));
      const out = absolute(r.path, ctx.workspaceRoot());
      output.appendLine(`SOBA: exported ${checkpointId} · ${out}`);
      void vscode.window.showInformationMessage(`SOBA: exported capsule ${checkpointId}`, 'Open').then((c) => {
        if (c === 'Open') void vscode.window.showTextDocument(vscode.Uri.file(out));
      });
      return r;
    },

    [PaletteCommand.loadCapsule]: async (pathArg) => {
      let file = str(pathArg);
      if (!file) {
        const root = ctx.workspaceRoot();
        const uris = await vscode.window.showOpenDialog({
          title: 'SOBA: Load Capsule',
          canSelectMany: false,
          canSelectFolders: false,
          defaultUri: root ? vscode.Uri.file(root) : undefined,
          filters: { 'SOBA capsule': ['capsule.md', 'md'] },
          openLabel: 'Load',
        });
        if (!uris || uris.length === 0) return undefined;
        file = uris[0].fsPath;
      }
      const r = await server.execute<CapsuleLoadResult>(ServerCommand.capsuleLoad, capsuleLoadArgs(absolute(file, ctx.workspaceRoot())));
      info(`SOBA: loaded capsule "${r.title}" · ${r.checkpointId}`);
      for (const w of r.warnings ?? []) {
        output.appendLine(`SOBA: warning: ${w}`);
        void vscode.window.showWarningMessage(`SOBA: ${w}`);
      }
      return r;
    },

    [PaletteCommand.showLatestCapsule]: async (checkpointArg) => {
      const r = await ctx.capsules.show(capsuleShowArgs(str(checkpointArg)).checkpointId);
      model.applyCapsuleMarkdown(r.markdown);
      ctx.changed();
      output.appendLine(`SOBA: showing capsule ${r.checkpointId}`);
      return r;
    },

    [PaletteCommand.listCapsules]: async () => {
      const list = await server.execute<CapsuleListItem[]>(ServerCommand.capsuleList, {});
      if (list.length === 0) {
        void vscode.window.showInformationMessage('SOBA: no capsules yet. Compact or create a capsule first.');
        return list;
      }
      const pick = await vscode.window.showQuickPick(capsulePickItems(list, ctx.now?.()), {
        title: 'SOBA: Capsules',
        placeHolder: `${count(list.length, 'capsule')}, newest first: pick one to read it`,
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!pick) return list;
      const r = await ctx.capsules.show(pick.value.checkpointId);
      model.applyCapsuleMarkdown(r.markdown);
      ctx.changed();
      return list;
    },

    [PaletteCommand.newSession]: async () => {
      const r = await server.execute<SessionNewResult>(ServerCommand.sessionNew, {});
      model.reset();
      ctx.changed();
      info(`SOBA: new session ${r.sessionId}`);
      return r;
    },

    [PaletteCommand.resumeSession]: async (sessionArg) => {
      let sessionId = str(sessionArg);
      if (!sessionId) {
        const [list, current] = await Promise.all([
          server.execute<SessionListItem[]>(ServerCommand.sessionList, {}),
          server.execute<SessionInfo>(ServerCommand.sessionInfo, {}).catch(() => undefined),
        ]);
        const items: PickItem<SessionListItem | undefined>[] = [
          { label: '$(add) New session', description: 'start over; this one stays in the list', value: undefined },
          ...sessionPickItems(list, current?.sessionId, ctx.now?.()),
        ];
        const pick = await vscode.window.showQuickPick(items, {
          title: 'SOBA: Sessions',
          placeHolder: list.length === 0 ? 'No sessions yet' : 'Session to continue, most recently updated first',
          matchOnDescription: true,
          matchOnDetail: true,
        });
        if (!pick) return undefined;
        if (!pick.value) return handlers[PaletteCommand.newSession]();
        sessionId = pick.value.sessionId;
      }
      const r = await server.execute<SessionResumeResult>(ServerCommand.sessionResume, sessionResumeArgs(sessionId));
      model.reset();
      await showTranscript(ctx);
      ctx.changed();
      info(`SOBA: resumed session ${r.sessionId} at ${r.leafId}`);
      return r;
    },

    [PaletteCommand.showSessionInfo]: async () => {
      const r = await server.execute<SessionInfo>(ServerCommand.sessionInfo, {});
      info(`SOBA: session ${r.sessionId} · ${r.entries} entries · leaf ${r.leafId} · ${r.path}`);
      return r;
    },

    [PaletteCommand.listSessions]: async () => {
      const [list, current] = await Promise.all([
        server.execute<SessionListItem[]>(ServerCommand.sessionList, {}),
        server.execute<SessionInfo>(ServerCommand.sessionInfo, {}).catch(() => undefined),
      ]);
      listed(list.length === 0 ? 'no sessions yet' : `${count(list.length, 'session')}, most recent first`, sessionListLines(list, current?.sessionId));
      return list;
    },

    [PaletteCommand.rewindSession]: async (arg) => {
      // A chat message's "Rewind to here" names the message; a caller may give an entry id.
      const userKey = typeof arg === 'object' && arg !== null && typeof (arg as { userKey?: unknown }).userKey === 'string' ? (arg as { userKey: string }).userKey : undefined;
      let points: HistoryPoint[] | undefined;
      try {
        points = await server.execute<HistoryPoint[]>(ServerAddition.sessionHistory, {});
      } catch (err) {
        // A server without soba.session.history (docs/protocol.md): the entry id is asked for.
        output.appendLine(`SOBA: soba.session.history is not available (${errorMessage(err)}); asking for an entry id`);
      }
      let point: HistoryPoint | undefined;
      let entryId = str(arg);
      if (entryId === undefined && points) {
        if (points.length === 0) {
          void vscode.window.showInformationMessage('SOBA: nothing to rewind to yet: the session has no requests');
          return undefined;
        }
        if (userKey) {
          point = pointOfMessage(model, userKey, points);
          if (!point) {
            void vscode.window.showWarningMessage('SOBA: this message is not on the session’s current path any more; pick a point instead');
          }
        }
        if (!point) {
          const pick = await vscode.window.showQuickPick(historyPickItems(points, ctx.now?.()), {
            title: 'SOBA: Rewind Session',
            placeHolder: 'Go back to just before… (files are not reverted)',
            matchOnDescription: true,
            matchOnDetail: true,
          });
          if (!pick) return undefined;
          point = pick.value;
        }
        const files = point.filesModifiedAfter ?? [];
        const what = point.kind === 'checkpoint' ? `the checkpoint “${clip(point.text, 60)}”` : `before “${clip(point.text, 60)}”`;
        const detail = [
          'The conversation goes back to that point; what you send next branches from there (the transcript keeps the rest).',
          files.length === 0
            ? 'Files are not reverted; no file was modified after that point.'
            : `Files are not reverted. Modified after that point and left as they are:\n${files.map((f) => `• ${f}`).join('\n')}`,
        ].join('\n\n');
        const ok = await vscode.window.showWarningMessage(`Rewind the session to ${what}?`, { modal: true, detail }, REWIND);
        if (ok !== REWIND) return undefined;
        entryId = point.rewindTo;
      } else if (entryId === undefined) {
        entryId = await vscode.window.showInputBox({
          title: 'SOBA: Rewind Session',
          prompt: 'Entry to move the leaf back to; new entries branch from there (the transcript keeps the rest; files are not reverted)',
          placeHolder: 'entry id, e.g. from SOBA: Show Session Info',
        });
        if (entryId === undefined) return undefined;
      }
      const args = sessionRewindArgs(entryId);
      const r = await server.execute<SessionRewindResult>(ServerCommand.sessionRewind, args);
      keepHistory(model, point ?? pointRewoundTo(points, args.entryId), points);
      ctx.changed();
      const files = point?.filesModifiedAfter ?? [];
      info(
        point
          ? `SOBA: rewound the session to ${point.kind === 'checkpoint' ? 'the checkpoint' : 'before'} “${clip(point.text, 60)}”${files.length > 0 ? ` · files not reverted: ${files.join(', ')}` : ''}`
          : // The leaf is the entry that records the rewind (hanging from the target), not the target itself.
            `SOBA: rewound the session to ${args.entryId} · leaf ${r.leafId}`,
      );
      return r;
    },
  };
  return handlers;
}

/**
 * TRANSCRIPT_PAGE is how many path entries a page of soba.session.transcript
 * covers: 60, or SOBA_CHAT_PAGE_ENTRIES from the extension host's
 * environment (1 to 500; the end-to-end test pages a short session with it).
 */
export const TRANSCRIPT_PAGE = pageEntries(typeof process !== 'undefined' ? process.env.SOBA_CHAT_PAGE_ENTRIES : undefined);

/** pageEntries reads a page size: an integer from 1 to 500, else 60. */
export function pageEntries(v: string | undefined): number {
  const n = Number(v);
  return Number.isInteger(n) && n >= 1 && n <= 500 ? n : 60;
}

/**
 * showTranscript puts the current session's conversation in the chat from
 * soba.session.transcript: its newest page (user messages, answers, tool
 * cards with results and approvals, compaction markers); older pages load
 * when the chat is scrolled up (loadOlder). A server without the command
 * gets the list of earlier requests (showEarlier).
 */
export async function showTranscript(ctx: Pick<CommandContext, 'server' | 'model' | 'changed'>): Promise<void> {
  let page: SessionTranscript;
  try {
    page = await ctx.server.execute<SessionTranscript>(ServerAddition.sessionTranscript, { limit: TRANSCRIPT_PAGE });
  } catch {
    return showEarlier(ctx);
  }
  ctx.model.applyTranscript(page, false);
  ctx.changed();
}

/** loadOlder puts the next older page of the reopened session on top of the chat. */
export async function loadOlder(ctx: Pick<CommandContext, 'server' | 'model' | 'changed'> & { output?: { appendLine(s: string): void } }): Promise<void> {
  const before = ctx.model.olderCursor;
  if (!before || ctx.model.loadingOlder) return;
  ctx.model.loadingOlder = true;
  ctx.changed();
  try {
    const page = await ctx.server.execute<SessionTranscript>(ServerAddition.sessionTranscript, { before, limit: TRANSCRIPT_PAGE });
    ctx.model.applyTranscript(page, true);
  } catch (err) {
    // The session moved on (a rewind, another session): nothing older of this chat to show.
    ctx.model.loadingOlder = false;
    ctx.model.olderCursor = '';
    ctx.output?.appendLine(`SOBA: earlier messages could not be loaded: ${errorMessage(err)}`);
  }
  ctx.changed();
}

/**
 * showEarlier puts the current session's earlier requests in the chat (the
 * answers stay in the transcript), so a reopened session does not look
 * empty and each request can still be rewound to. A server without
 * soba.session.history shows nothing earlier.
 */
export async function showEarlier(ctx: Pick<CommandContext, 'server' | 'model' | 'changed'>): Promise<void> {
  const points = await ctx.server.execute<HistoryPoint[]>(ServerAddition.sessionHistory, {}).catch(() => undefined);
  if (!points) return;
  ctx.model.applyEarlier(points.filter((p) => p.kind === 'user'));
  ctx.changed();
}

/** rewindIdOf is the entry id of a typed `/rewind <id>`, or undefined (`/rewind` alone lists the points). */
export function rewindIdOf(typed: string): string | undefined {
  return /^\s*\/rewind\s+(\S+)\s*$/.exec(typed)?.[1];
}

/**
 * pointRewoundTo is the point a rewind to entry `id` stands just before: one whose rewindTo is `id` (a
 * request's parent, a checkpoint itself). A request's own id is no such point: rewinding to it keeps the
 * request on the path without its answer, which the chat cannot show as is.
 */
export function pointRewoundTo(points: HistoryPoint[] | undefined, id: string | undefined): HistoryPoint | undefined {
  return id === undefined ? undefined : points?.find((p) => p.rewindTo === id);
}

/** REWIND is the confirming button of a rewind. */
const REWIND = 'Rewind';

function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/**
 * pointOfMessage finds the rewind point of a user message shown in the chat:
 * the history's user points with the same text (the server clips it to 200
 * bytes), counted from the newest, as the chat's messages with that text are.
 */
export function pointOfMessage(model: SidebarModel, userKey: string, points: HistoryPoint[]): HistoryPoint | undefined {
  const msgs = model.userMessages();
  const i = msgs.findIndex((m) => m.key === userKey);
  if (i < 0) return undefined;
  const norm = (t: string) => t.replace(/\s+/g, ' ').trim();
  const text = norm(msgs[i].text);
  const same = (t: string) => {
    const p = norm(t);
    return p === text || (p.length >= 150 && text.startsWith(p.replace(/…$/, '')));
  };
  const later = msgs.slice(i + 1).filter((m) => same(m.text)).length;
  const candidates = points.filter((p) => p.kind === 'user' && same(p.text));
  return candidates[candidates.length - 1 - later];
}

/**
 * keepHistory leaves on screen what the session's path still holds after a
 * rewind to a point: the conversation before the request (or, for a
 * checkpoint, before the first request made after it). Without a point it
 * is not known, and the conversation is cleared.
 */
export function keepHistory(model: SidebarModel, point: HistoryPoint | undefined, points?: HistoryPoint[]): void {
  if (!point) {
    model.reset();
    return;
  }
  if (point.kind === 'checkpoint' && points) {
    // The path's order says which request came first after the checkpoint; the clocks of the editor and the
    // server need not agree.
    const at = points.indexOf(point);
    const next = at < 0 ? undefined : points.slice(at + 1).find((p) => p.kind === 'user');
    if (at >= 0 && !next) return; // no request was made after it
    if (next) point = next;
  }
  const msgs = model.userMessages();
  let idx = -1;
  if (point.kind === 'user') {
    const p = point.text.replace(/\s+/g, ' ').trim();
    for (let i = msgs.length - 1; i >= 0; i--) {
      if (msgs[i].text.replace(/\s+/g, ' ').trim() === p) {
        idx = i;
        break;
      }
    }
  }
  if (idx < 0) {
    const at = Date.parse(point.createdAt);
    idx = msgs.findIndex((m) => m.at >= at);
    if (point.kind === 'checkpoint' && idx < 0) return; // nothing shown was made after it
    if (idx < 0) idx = 0;
  }
  model.rewoundTo(idx, false);
}

/** count is "1 checkpoint", "3 checkpoints". */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * guarded wraps a handler so that a bad input or a failed command becomes a
 * message (and a line in the output) instead of an unhandled rejection.
 */
export function guarded(id: string, h: Handler, output: OutputLike): Handler {
  return async (...args) => {
    try {
      return await h(...args);
    } catch (err) {
      if (err instanceof ArgumentError) {
        void vscode.window.showWarningMessage(err.message);
        return undefined;
      }
      const msg = `SOBA: ${id.replace(/^soba-vscode\./, '')} failed: ${errorMessage(err)}`;
      output.appendLine(msg);
      void vscode.window.showErrorMessage(msg, 'Show Output').then((c) => {
        if (c === 'Show Output') output.show(true);
      });
      return undefined;
    }
  };
}

/** registerPaletteCommands registers every palette command. */
export function registerPaletteCommands(ctx: CommandContext): vscode.Disposable[] {
  return Object.entries(paletteHandlers(ctx)).map(([id, h]) => vscode.commands.registerCommand(id, guarded(id, h, ctx.output)));
}

function absolute(p: string, root: string | undefined): string {
  if (path.isAbsolute(p) || !root) return p;
  return path.join(root, p);
}
