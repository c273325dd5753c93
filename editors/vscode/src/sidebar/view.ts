// SidebarView is the webview in the SOBA activity-bar container: the
// conversation first, the budget as a compact header above it, compactions,
// pending intents and files collapsed below, and an input box that asks the
// agent. The extension posts the model's snapshot; the webview script
// (dist/webview.js, from src/webview/main.ts) renders it, Markdown included,
// and sends back what the user typed or clicked. Card actions name an item
// by its key; what they do is looked up here, so the webview can only point
// at what the extension showed it.
import * as vscode from 'vscode';
import type { SidebarModel, StreamItem } from './model';

export const SIDEBAR_VIEW_ID = 'soba.sidebar';

/** Messages from the webview. */
type FromWebview =
  | { type: 'ask'; text: string }
  | { type: 'command'; id: string }
  | { type: 'copy'; text: string }
  | { type: 'action'; action: string; key?: string; path?: string }
  | { type: 'older' }
  | { type: 'ready' };

/** WEBVIEW_COMMANDS are the extension commands the sidebar's buttons may run. */
const WEBVIEW_COMMANDS = new Set(['soba-vscode.compact', 'soba-vscode.cancel', 'soba-vscode.showLatestCapsule', 'soba-vscode.createCapsule']);

/** MAX_COPY bounds what a Copy button puts on the clipboard. */
const MAX_COPY = 1 << 20;

/** SidebarActions carries out what the cards' buttons ask for. */
export interface SidebarActions {
  /** run runs a card action on the item it was shown for (undefined for the file lists, which give a path). */
  run(action: string, item: StreamItem | undefined, path: string | undefined): Promise<unknown> | void;
}

export class SidebarView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view?: vscode.WebviewView;
  private timer?: ReturnType<typeof setTimeout>;
  private subs: vscode.Disposable[] = [];

  constructor(private readonly extensionUri: vscode.Uri, private readonly model: SidebarModel, private readonly actions?: SidebarActions) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = this.shell(view.webview, media, dist);
    this.subs.push(
      view.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m)),
      view.onDidChangeVisibility(() => view.visible && this.post()),
      view.onDidDispose(() => (this.view = undefined)),
    );
  }

  /** receive handles one message of the webview; exported behaviour for the tests. */
  receive(m: FromWebview): void {
    if (!m || typeof m !== 'object') return;
    if (m.type === 'ready') this.post();
    else if (m.type === 'older' || (m.type === 'action' && m.action === 'older')) void this.actions?.run('older', undefined, undefined);
    else if (m.type === 'ask' && typeof m.text === 'string' && m.text.trim() !== '') void vscode.commands.executeCommand('soba-vscode.ask', m.text);
    else if (m.type === 'command' && WEBVIEW_COMMANDS.has(m.id)) void vscode.commands.executeCommand(m.id);
    else if (m.type === 'copy' && typeof m.text === 'string') void vscode.env.clipboard.writeText(m.text.slice(0, MAX_COPY));
    else if (m.type === 'action' && typeof m.action === 'string') {
      const item = typeof m.key === 'string' ? this.model.stream.find((s) => s.key === m.key) : undefined;
      // A file-list path must be one the model lists, not whatever the webview sends.
      const snap = this.model.snapshot();
      const path = typeof m.path === 'string' && (snap.filesRead.includes(m.path) || snap.filesModified.includes(m.path)) ? m.path : undefined;
      if (item || path || m.action === 'output') void this.actions?.run(m.action, item, path);
    }
  }

  /** refresh re-renders soon; bursts of notifications (text deltas) coalesce into one render. */
  refresh(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.post();
    }, 50);
  }

  private post(): void {
    if (!this.view) return;
    void this.view.webview.postMessage({ type: 'state', state: this.model.snapshot() });
  }

  private shell(webview: vscode.Webview, media: vscode.Uri, dist: vscode.Uri): string {
    const nonce = [...Array(24)].map(() => Math.floor(Math.random() * 36).toString(36)).join('');
    const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'sidebar.css'));
    const js = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js'));
    // No inline script or style, no network: the script by nonce, styles and fonts from the extension only.
    const csp = `default-src 'none'; style-src ${webview.cspSource}; font-src ${webview.cspSource}; img-src ${webview.cspSource} data:; script-src 'nonce-${nonce}';`;
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${css}" rel="stylesheet"><title>SOBA</title></head>
<body>
<div class="toolbar"><button data-command="soba-vscode.cancel" data-control="cancel" title="Cancel the running turn or compaction" disabled>Cancel</button><button class="secondary" data-command="soba-vscode.compact" data-control="compact" title="Compact the context now" disabled>Compact</button><button class="secondary" data-command="soba-vscode.showLatestCapsule" data-control="capsule" title="Show the latest capsule" disabled>Capsule</button></div>
<div id="content"><p class="muted">Starting soba-lsp…</p></div>
<form id="ask"><textarea id="prompt" rows="3" placeholder="Ask SOBA, or /help for commands… (Enter to send, Shift+Enter for a new line)"></textarea><button type="submit" disabled>Ask</button></form>
<script nonce="${nonce}" src="${js}"></script>
</body></html>`;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs) s.dispose();
  }
}
