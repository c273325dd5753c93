// Approvals: the server asks through window/showMessageRequest whether a tool
// may run (tools.approval "ask"). vscode-languageclient shows such requests
// as a plain toast, which is easy to miss while the turn waits; the extension
// replaces that handler with a modal dialog. Dismissing it answers null,
// which the server takes as Deny.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { ApprovalDetail } from './protocol';

export interface ShowMessageRequestParams {
  type: number;
  message: string;
  actions?: { title: string }[];
  /**
   * SOBA's extension: the tool, for a write or an edit the path and the file's content after it, and what
   * the allow for the session covers (its action's title names it: "Allow file edits for this session").
   */
  soba?: Partial<ApprovalDetail> & { tool: string };
}

/** PROPOSED_SCHEME serves proposed contents as read-only documents: nothing "Untitled" asks to be saved. */
export const PROPOSED_SCHEME = 'soba-proposed';

/** MAX_PROPOSALS bounds the proposals kept for their documents. */
const MAX_PROPOSALS = 20;

/** ProposedDocuments holds what writes and edits would make of files, for the approval's diff. */
export class ProposedDocuments {
  private texts = new Map<string, string>();
  private seq = 0;

  /** add keeps a proposal and returns its read-only document; the path keeps the file's name (and language). */
  add(rel: string, content: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: `/${++this.seq}/${rel.replace(/^\/+/, '')}` });
    this.texts.set(uri.path, content);
    while (this.texts.size > MAX_PROPOSALS) this.texts.delete(this.texts.keys().next().value as string);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }
}

/** proposedDocuments is the extension's one store of proposals (registered for PROPOSED_SCHEME). */
export const proposedDocuments = new ProposedDocuments();

/**
 * showProposedDiff opens VS Code's diff of a workspace file (empty when it does not exist yet) against the
 * content a write or an edit would give it, so the user approves exactly what will be written (R-W3). Both
 * sides are read-only: the proposal is a soba-proposed: document, never an editable "Untitled" buffer.
 */
export async function showProposedDiff(root: string | undefined, rel: string, proposed: string): Promise<void> {
  const right = proposedDocuments.add(rel, proposed);
  const file = root ? path.join(root, rel) : undefined;
  const left = file && fs.existsSync(file) ? vscode.Uri.file(file) : proposedDocuments.add(rel, '');
  await vscode.commands.executeCommand('vscode.diff', left, right, `SOBA proposes: ${rel}`, { preview: true });
}

/** MessageType values of LSP. */
const MessageType = { Error: 1, Warning: 2, Info: 3, Log: 4 } as const;

/**
 * showMessageRequestModal shows a server question as a modal dialog with its
 * actions as buttons and returns the chosen action (or null).
 */
export async function showMessageRequestModal(params: ShowMessageRequestParams): Promise<{ title: string } | null> {
  // Deny stays an ordinary button, first: VS Code makes the first button that is not the close affordance
  // the dialog's primary, focused one, and Enter must not allow. The "Cancel" VS Code then adds (and
  // Escape, and the dialog's close) answer nothing, which the server takes as Deny too.
  const proposal = params.soba;
  if (proposal?.path !== undefined && proposal.proposed !== undefined) {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    // A diff that cannot open must not hide the question: the dialog still shows the change as text.
    await showProposedDiff(root, proposal.path, proposal.proposed).catch(() => undefined);
  }
  const deny = (params.actions ?? []).filter((a) => a.title === 'Deny');
  const actions = [...deny, ...(params.actions ?? []).filter((a) => a.title !== 'Deny')].map((a) => ({ title: a.title }));
  const [message, ...rest] = params.message.split('\n');
  const options: vscode.MessageOptions = { modal: true };
  if (rest.length > 0) options.detail = rest.join('\n');
  let choice: { title: string } | undefined;
  switch (params.type) {
    case MessageType.Error:
      choice = await vscode.window.showErrorMessage(message, options, ...actions);
      break;
    case MessageType.Info:
    case MessageType.Log:
      choice = await vscode.window.showInformationMessage(message, options, ...actions);
      break;
    default:
      choice = await vscode.window.showWarningMessage(message, options, ...actions);
  }
  return choice ? { title: choice.title } : null;
}
