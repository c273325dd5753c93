// The SOBA extension: starts soba-lsp over stdio through
// vscode-languageclient, passes the soba.* settings as initializationOptions
// and forwards their changes, and wires the palette, the status bar, the
// sidebar, progress and approvals to the connection.
import * as fs from 'fs';
import * as vscode from 'vscode';
import {
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import * as path from 'path';
import { PROPOSED_SCHEME, proposedDocuments } from './approvals';
import { Baselines } from './baselines';
import { CAPSULE_SCHEME, CapsuleDocuments } from './capsules';
import { loadOlder, PaletteCommand, registerPaletteCommands, showTranscript } from './commands';
import { ServerCommand, type Budget } from './protocol';
import { Frontend } from './frontend';
import { executeCommandLink, type RequestSender, type ServerLink } from './server';
import { resolveServerPath, serverSettings } from './settings';
import { SidebarModel } from './sidebar/model';
import type { StreamItem } from './sidebar/model';
import { SIDEBAR_VIEW_ID, SidebarView } from './sidebar/view';
import { BudgetStatusBar } from './statusBar';

let running: SobaExtension | undefined;

/** BEFORE_SCHEME serves a file's baseline (read-only) as the left side of "Open diff". */
const BEFORE_SCHEME = 'soba-before';

export async function activate(context: vscode.ExtensionContext): Promise<SobaExtension> {
  running = new SobaExtension(context);
  await running.start();
  return running;
}

export async function deactivate(): Promise<void> {
  await running?.stop();
  running = undefined;
}

/** SobaExtension owns the client and everything that shows its state. */
export class SobaExtension {
  readonly output = vscode.window.createOutputChannel('SOBA');
  private readonly trace = vscode.window.createOutputChannel('SOBA Language Server');
  readonly model = new SidebarModel();
  readonly status = new BudgetStatusBar();
  readonly sidebar: SidebarView;
  readonly frontend: Frontend;
  readonly capsules: CapsuleDocuments;
  readonly baselines = new Baselines(() => workspaceRoot());
  client?: LanguageClient;
  private readonly link: ServerLink;
  /** started is the program and arguments of the running server, to tell a real change of them. */
  private started = '';

  constructor(private readonly context: vscode.ExtensionContext) {
    this.sidebar = new SidebarView(context.extensionUri, this.model, { run: (a, item, p) => this.sidebarAction(a, item, p) });
    this.frontend = new Frontend(this.output, this.model, this.status, () => this.sidebar.refresh(), () => this.client, this.baselines);
    this.link = executeCommandLink(() => (this.client?.isRunning() ? (this.client as unknown as RequestSender) : undefined));
    this.capsules = new CapsuleDocuments(this.link);
    const ctx = {
      capsules: this.capsules,
      server: this.link,
      output: this.output,
      model: this.model,
      changed: () => this.sidebar.refresh(),
      status: this.status,
      workspaceRoot: () => workspaceRoot(),
      fileExists: (f: string) => fs.existsSync(f),
    };
    context.subscriptions.push(
      this.output,
      this.trace,
      this.status,
      this.sidebar,
      this.capsules,
      vscode.window.registerWebviewViewProvider(SIDEBAR_VIEW_ID, this.sidebar),
      vscode.workspace.registerTextDocumentContentProvider(CAPSULE_SCHEME, this.capsules),
      vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, proposedDocuments),
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, {
        provideTextDocumentContent: (uri) => this.baselines.get(uri.path.replace(/^\//, ''))?.content ?? '',
      }),
      ...registerPaletteCommands(ctx),
      vscode.commands.registerCommand('soba-vscode.restartServer', () => this.restart()),
      vscode.commands.registerCommand('soba-vscode.showOutput', () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.trustGranted()),
    );
  }

  /** serverCommand is the program and arguments the settings name now. */
  private serverCommand() {
    const cfg = vscode.workspace.getConfiguration('soba');
    const found = resolveServerPath({
      setting: cfg.get<string>('serverPath', ''),
      extensionPath: this.context.extensionPath,
      envPath: process.env.PATH ?? '',
      workspaceFolder: workspaceRoot(),
      workspaceTrusted: vscode.workspace.isTrusted,
      isExecutable,
    });
    return { found, args: cfg.get<string[]>('serverArgs', []) };
  }

  async start(): Promise<void> {
    const { found, args } = this.serverCommand();
    if (!found.ok) {
      this.output.appendLine(found.message);
      this.status.setConnected(false);
      void vscode.window.showErrorMessage(found.message, 'Open Settings', 'Show Output').then((c) => {
        if (c === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'soba.serverPath');
        if (c === 'Show Output') this.output.show(true);
      });
      return;
    }
    this.started = JSON.stringify([found.command, args]);
    this.output.appendLine(`SOBA: starting ${found.command}${args.length ? ' ' + args.join(' ') : ''} (${found.from})`);
    // stdio without `transport`: TransportKind.stdio would append `--stdio`
    // to the arguments, and soba-lsp serves stdio with no arguments.
    const serverOptions: ServerOptions = {
      command: found.command,
      args,
      options: { cwd: workspaceRoot() },
    };
    const clientOptions: LanguageClientOptions = {
      // Every file on disk: the server tracks which documents the user opens
      // and saves for the capsule's file artifacts. It needs no content, so
      // keystrokes are not sent (the server's watcher sees what is saved).
      documentSelector: [{ scheme: 'file' }],
      middleware: { didChange: async () => {} },
      initializationOptions: currentServerSettings(),
      outputChannel: this.trace,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
    };
    const client = new LanguageClient('soba', 'SOBA Language Server', serverOptions, clientOptions);
    client.registerFeature(this.overrides(client));
    this.frontend.attach(client);
    client.onDidChangeState((e) => this.setConnected(e.newState === State.Running));
    this.client = client;
    try {
      await client.start();
      this.setConnected(true);
      const info = client.initializeResult?.serverInfo;
      this.output.appendLine(`SOBA: connected to ${info?.name ?? 'soba-lsp'} ${info?.version ?? ''}`.trimEnd());
      // The first budget, without a message: soba/budget keeps it current.
      this.link.execute<Budget>(ServerCommand.budget, {}).then(
        (b) => this.frontend.budget(b),
        (err) => this.output.appendLine(`SOBA: soba.budget failed: ${err instanceof Error ? err.message : String(err)}`),
      );
      // The server reopened the workspace's newest session (sessionOnStart, or the window was reloaded):
      // its conversation is shown, the newest page first.
      this.model.reset();
      void showTranscript({ server: this.link, model: this.model, changed: () => this.sidebar.refresh() });
    } catch (err) {
      const msg = `SOBA: soba-lsp (${found.command}) did not start: ${err instanceof Error ? err.message : String(err)}`;
      this.output.appendLine(msg);
      this.status.setConnected(false);
      void vscode.window.showErrorMessage(msg, 'Show Output').then((c) => c && this.output.show(true));
    }
  }

  /**
   * overrides is a client feature initialised after the built-in ones, so its
   * request handlers replace theirs on every (re)start: progress as a
   * cancellable notification, showMessageRequest as a modal dialog.
   */
  private overrides(client: LanguageClient): StaticFeature {
    return {
      fillClientCapabilities: () => {},
      initialize: () => {
        for (const [method, handler] of Object.entries(this.frontend.requestHandlers())) client.onRequest(method, handler);
      },
      getState: () => ({ kind: 'static' }),
      clear: () => this.frontend.progress.dispose(),
    };
  }

  private setConnected(ok: boolean): void {
    this.status.setConnected(ok);
    this.model.connected = ok;
    this.sidebar.refresh();
  }

  /** sidebarAction carries out a button of a conversation card or a file list. */
  async sidebarAction(action: string, item: StreamItem | undefined, rel: string | undefined): Promise<unknown> {
    const run = (id: string, ...args: unknown[]) => vscode.commands.executeCommand(id, ...args);
    switch (action) {
      case 'retry':
        return item?.kind === 'error' && item.retry !== undefined ? run(PaletteCommand.ask, item.retry) : undefined;
      case 'settings':
        return run('workbench.action.openSettings', 'soba.model');
      case 'output':
        return this.output.show(true);
      case 'older':
        return loadOlder({ server: this.link, model: this.model, changed: () => this.sidebar.refresh(), output: this.output });
      case 'capsule':
        return item?.kind === 'compaction' && item.checkpointId ? run(PaletteCommand.showLatestCapsule, item.checkpointId) : undefined;
      case 'rewind':
        return item?.kind === 'user' ? run(PaletteCommand.rewindSession, { userKey: item.key }) : undefined;
      case 'open':
      case 'open-path': {
        const p = item?.kind === 'tool' ? item.path : rel;
        return p ? this.openFile(p) : undefined;
      }
      case 'diff':
      case 'diff-path': {
        const p = item?.kind === 'tool' ? item.path : rel;
        return p ? this.openDiff(p) : undefined;
      }
    }
    return undefined;
  }

  private async openFile(rel: string): Promise<void> {
    const abs = this.baselines.resolve(rel);
    if (!abs) {
      void vscode.window.showWarningMessage(`SOBA: ${rel} is not a file in the workspace`);
      return;
    }
    await vscode.window.showTextDocument(vscode.Uri.file(abs), { preview: true });
  }

  /** openDiff compares a file with its content when the session first saw it (baselines.ts). */
  async openDiff(rel: string): Promise<void> {
    const abs = this.baselines.resolve(rel);
    const base = this.baselines.get(rel);
    if (!abs || !base) {
      void vscode.window.showInformationMessage(`SOBA: no earlier version of ${rel} is known in this session; opening the file`);
      if (abs) await this.openFile(rel);
      return;
    }
    const left = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${rel}` });
    const title = `${path.basename(rel)} (${base.content === undefined ? 'new file' : 'before SOBA'} ↔ now)`;
    await vscode.commands.executeCommand('vscode.diff', left, vscode.Uri.file(abs), title, { preview: true });
  }

  private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration('soba')) return;
    if (e.affectsConfiguration('soba.serverPath') || e.affectsConfiguration('soba.serverArgs')) {
      // Trusting a folder re-reads its settings file, which fires this for
      // settings VS Code still ignores there (machine scope): restart only
      // when the program or its arguments really change.
      const { found, args } = this.serverCommand();
      if (!this.client?.isRunning() || !found.ok || JSON.stringify([found.command, args]) !== this.started) {
        void this.restart();
        return;
      }
    }
    void this.sendSettings();
  }

  /**
   * trustGranted: the user trusted the workspace (Workspace Trust). The
   * server applies the repository's settings from now on; a server that
   * could not start (a relative soba.serverPath) is started now.
   */
  private trustGranted(): void {
    this.output.appendLine('SOBA: the workspace is trusted now; its settings apply');
    if (this.client?.isRunning()) {
      void this.sendSettings();
    } else {
      void this.restart();
    }
  }

  /**
   * sendSettings sends the current settings as didChangeConfiguration, then
   * asks for the budget: the server applies them at once but sends no
   * soba/budget of its own for what changed in it (the repository settings
   * it ignores, the limits).
   */
  private async sendSettings(): Promise<void> {
    const client = this.client;
    if (!client?.isRunning()) return;
    await client.sendNotification('workspace/didChangeConfiguration', { settings: { soba: currentServerSettings() } });
    try {
      this.frontend.budget(await this.link.execute<Budget>(ServerCommand.budget, {}));
    } catch (err) {
      this.output.appendLine(`SOBA: soba.budget failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    this.frontend.progress.dispose();
    if (c) {
      try {
        await c.stop(5000);
      } catch {
        // The server may already be gone; stop() then rejects.
      }
    }
  }
}

/**
 * currentServerSettings is the `soba` object the server gets: the user's
 * settings, the workspace's as repositorySettings, and whether the
 * workspace is trusted (settings.ts).
 */
function currentServerSettings(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration('soba');
  return serverSettings((key) => cfg.inspect(key), vscode.workspace.isTrusted);
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
