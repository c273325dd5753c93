// The command palette (category "SOBA"). Each command asks the user what it
// needs, builds the server command's argument (args.ts), runs it through the
// ServerLink and renders the result: a line in the SOBA output channel, a
// message, an editor tab, the status bar and the sidebar. The server's own
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
  promptArgs,
  sessionPickItems,
  sessionResumeArgs,
  suggestedCapsuleName,
  type CheckpointKind,
} from './args';
import { budgetSummary, resultLine } from './format';
import {
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
  type PromptResult,
  type SessionInfo,
  type SessionListItem,
  type SessionNewResult,
  type SessionResumeResult,
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
  newSession: 'soba-vscode.newSession',
  resumeSession: 'soba-vscode.resumeSession',
  showSessionInfo: 'soba-vscode.showSessionInfo',
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
    let line = resultLine(r);
    // R-F1: the user must see that the capsule is the local fallback.
    if (r.quality === 'degraded' && !/degraded|fallback/i.test(line)) line += ' (degraded fallback)';
    this.output.appendLine(line);
    return true;
  }
}

const resultLogs = new WeakMap<OutputLike, ResultLog>();

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
  const info = (msg: string) => {
    output.appendLine(msg);
    void vscode.window.showInformationMessage(msg);
  };
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

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

  return {
    [PaletteCommand.ask]: async (textArg) => {
      const text =
        str(textArg) ??
        (await vscode.window.showInputBox({ title: 'SOBA: Ask', prompt: 'Ask the agent', placeHolder: 'e.g. add a test for the parser' }));
      if (text === undefined) return undefined;
      const args = promptArgs(text);
      const r = await server.execute<PromptResult>(ServerCommand.prompt, args);
      model.applyUserPrompt(r.turnId, args.text);
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
      const line = resultLine(r);
      if (r.outcome === 'failed' || r.outcome === 'stale') void vscode.window.showWarningMessage(line);
      else void vscode.window.showInformationMessage(line);
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

    [PaletteCommand.exportCapsule]: async (checkpointArg, pathArg) => {
      let checkpointId = str(checkpointArg);
      let title = '';
      if (!checkpointId) {
        const list = await server.execute<CapsuleListItem[]>(ServerCommand.capsuleList, {});
        if (list.length === 0) {
          void vscode.window.showInformationMessage('SOBA: no checkpoints yet. Create a capsule or compact first.');
          return undefined;
        }
        const pick = await vscode.window.showQuickPick(capsulePickItems(list), { title: 'SOBA: Export Capsule', placeHolder: 'Checkpoint to export' });
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
      const r = await server.execute<CapsuleExportResult>(ServerCommand.capsuleExport, capsuleExportArgs(checkpointId, file, ctx.fileExists(file)));
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
      const r = await server.execute<CapsuleShowResult>(ServerCommand.capsuleShow, capsuleShowArgs(str(checkpointArg)));
      model.applyCapsuleMarkdown(r.markdown);
      ctx.changed();
      const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: r.markdown });
      await vscode.window.showTextDocument(doc, { preview: true });
      output.appendLine(`SOBA: showing capsule ${r.checkpointId}`);
      return r;
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
        if (list.length === 0) {
          void vscode.window.showInformationMessage('SOBA: no sessions to resume');
          return undefined;
        }
        const pick = await vscode.window.showQuickPick(sessionPickItems(list, current?.sessionId), { title: 'SOBA: Resume Session', placeHolder: 'Session to resume' });
        if (!pick) return undefined;
        sessionId = pick.value.sessionId;
      }
      const r = await server.execute<SessionResumeResult>(ServerCommand.sessionResume, sessionResumeArgs(sessionId));
      model.reset();
      ctx.changed();
      info(`SOBA: resumed session ${r.sessionId} at ${r.leafId}`);
      return r;
    },

    [PaletteCommand.showSessionInfo]: async () => {
      const r = await server.execute<SessionInfo>(ServerCommand.sessionInfo, {});
      info(`SOBA: session ${r.sessionId} · ${r.entries} entries · leaf ${r.leafId} · ${r.path}`);
      return r;
    },
  };
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
