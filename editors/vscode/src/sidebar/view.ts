// SidebarView is the webview in the SOBA activity-bar container: the budget
// gauge, latest compactions, pending intents, files read and modified and the
// conversation stream, with an input box that asks the agent. The extension
// renders the HTML (render.ts) and posts it; the webview script only puts it
// in place and sends back what the user typed.
import * as vscode from 'vscode';
import { renderSidebar } from './render';
import type { SidebarModel } from './model';

export const SIDEBAR_VIEW_ID = 'soba.sidebar';

/** Messages from the webview. */
type FromWebview = { type: 'ask'; text: string } | { type: 'command'; id: string } | { type: 'ready' };

/** WEBVIEW_COMMANDS are the extension commands the sidebar's buttons may run. */
const WEBVIEW_COMMANDS = new Set(['soba-vscode.compact', 'soba-vscode.cancel', 'soba-vscode.showLatestCapsule', 'soba-vscode.createCapsule']);

export class SidebarView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view?: vscode.WebviewView;
  private timer?: ReturnType<typeof setTimeout>;
  private subs: vscode.Disposable[] = [];

  constructor(private readonly extensionUri: vscode.Uri, private readonly model: SidebarModel) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.shell(view.webview, media);
    this.subs.push(
      view.webview.onDidReceiveMessage((m: FromWebview) => this.receive(m)),
      view.onDidChangeVisibility(() => view.visible && this.post()),
      view.onDidDispose(() => (this.view = undefined)),
    );
  }

  private receive(m: FromWebview): void {
    if (m.type === 'ready') this.post();
    else if (m.type === 'ask' && typeof m.text === 'string' && m.text.trim() !== '') void vscode.commands.executeCommand('soba-vscode.ask', m.text);
    else if (m.type === 'command' && WEBVIEW_COMMANDS.has(m.id)) void vscode.commands.executeCommand(m.id);
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
    void this.view.webview.postMessage({ type: 'render', html: renderSidebar(this.model.snapshot()) });
  }

  private shell(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = [...Array(24)].map(() => Math.floor(Math.random() * 36).toString(36)).join('');
    const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'sidebar.css'));
    const js = webview.asWebviewUri(vscode.Uri.joinPath(media, 'sidebar.js'));
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${css}" rel="stylesheet"><title>SOBA</title></head>
<body>
<div class="toolbar"><button data-command="soba-vscode.compact" title="Compact Context">Compact</button><button data-command="soba-vscode.cancel" title="Cancel the turn or compaction">Cancel</button><button data-command="soba-vscode.showLatestCapsule" title="Show the latest capsule">Capsule</button></div>
<div id="content"><p class="muted">Starting soba-lsp…</p></div>
<form id="ask"><textarea id="prompt" rows="3" placeholder="Ask SOBA, or /help for commands… (Enter to send, Shift+Enter for a new line)"></textarea><button type="submit">Ask</button></form>
<script nonce="${nonce}" src="${js}"></script>
</body></html>`;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs) s.dispose();
  }
}
