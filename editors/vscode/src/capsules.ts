// Capsules as read-only virtual documents: `soba-capsule:/<checkpointId>.capsule.md`
// is served by a TextDocumentContentProvider from soba.capsule.show, so
// showing one never creates an "Untitled" buffer that asks to be saved, and
// it opens as a Markdown preview. The front matter (ids, checksums) is for
// machines: it is left out of what the user reads.
import * as vscode from 'vscode';
import { ServerCommand, type CapsuleShowResult } from './protocol';
import type { ServerLink } from './server';

export const CAPSULE_SCHEME = 'soba-capsule';

/** MAX_CACHED bounds the capsules kept in memory for their documents. */
const MAX_CACHED = 20;

/** capsuleUri is the virtual document of a checkpoint's capsule. */
export function capsuleUri(checkpointId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CAPSULE_SCHEME, path: `/${checkpointId}.capsule.md` });
}

/** checkpointOf reads the checkpoint id back from a capsule document's URI. */
export function checkpointOf(uri: vscode.Uri): string | undefined {
  const m = /^\/?([A-Za-z0-9_.-]+)\.capsule\.md$/.exec(uri.path);
  return m ? m[1] : undefined;
}

/** stripFrontMatter removes a leading `---` … `---` block (YAML front matter) and the blank lines after it. */
export function stripFrontMatter(markdown: string): string {
  const m = /^\uFEFF?---\r?\n[\s\S]*?\r?\n---[ \t]*(?:\r?\n|$)/.exec(markdown);
  return m ? markdown.slice(m[0].length).replace(/^(\r?\n)+/, '') : markdown;
}

export class CapsuleDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private cache = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: ServerLink) {}

  /** remember keeps a capsule the server already sent, so opening it asks nothing more. */
  remember(r: CapsuleShowResult): void {
    this.cache.delete(r.checkpointId);
    this.cache.set(r.checkpointId, stripFrontMatter(r.markdown));
    while (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = checkpointOf(uri);
    if (!id) return `No capsule here: ${uri.toString()} does not name a checkpoint.`;
    const cached = this.cache.get(id);
    if (cached !== undefined) return cached;
    const r = await this.server.execute<CapsuleShowResult>(ServerCommand.capsuleShow, { checkpointId: id });
    this.remember(r);
    return this.cache.get(r.checkpointId) ?? stripFrontMatter(r.markdown);
  }

  /**
   * show opens a capsule (the latest when no id is given) as a Markdown
   * preview of its read-only document; without the Markdown extension, as
   * the document itself.
   */
  async show(checkpointId?: string): Promise<CapsuleShowResult> {
    const r = await this.server.execute<CapsuleShowResult>(ServerCommand.capsuleShow, checkpointId ? { checkpointId } : {});
    await this.open(r);
    return r;
  }

  /** open shows a capsule the server already sent (a `/capsule` typed in the chat). */
  async open(r: CapsuleShowResult): Promise<CapsuleShowResult> {
    this.remember(r);
    const uri = capsuleUri(r.checkpointId);
    this.changed.fire(uri);
    try {
      await vscode.commands.executeCommand('markdown.showPreview', uri);
    } catch {
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(doc, { preview: true });
    }
    return r;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
