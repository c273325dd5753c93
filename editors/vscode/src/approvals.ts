// Approvals: the server asks through window/showMessageRequest whether a tool
// may run (tools.approval "ask"). vscode-languageclient shows such requests
// as a plain toast, which is easy to miss while the turn waits; the extension
// replaces that handler with a modal dialog. Dismissing it answers null,
// which the server takes as Deny.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

export interface ShowMessageRequestParams {
  type: number;
  message: string;
  actions?: { title: string }[];
  /** SOBA's extension: the tool, and for a write or an edit the path and the file's content after it. */
  soba?: { tool: string; path?: string; proposed?: string };
}

/**
 * showProposedDiff opens VS Code's diff of a workspace file (empty when it does not exist yet) against the
 * content a write or an edit would give it, so the user approves exactly what will be written (R-W3).
 */
export async function showProposedDiff(root: string | undefined, rel: string, proposed: string): Promise<void> {
  const right = await vscode.workspace.openTextDocument({ content: proposed });
  const file = root ? path.join(root, rel) : undefined;
  const left = file && fs.existsSync(file) ? vscode.Uri.file(file) : (await vscode.workspace.openTextDocument({ content: '' })).uri;
  await vscode.commands.executeCommand('vscode.diff', left, right.uri, `SOBA proposes: ${rel}`, { preview: true });
}

/** MessageType values of LSP. */
const MessageType = { Error: 1, Warning: 2, Info: 3, Log: 4 } as const;

/**
 * showMessageRequestModal shows a server question as a modal dialog with its
 * actions as buttons and returns the chosen action (or null).
 */
export async function showMessageRequestModal(params: ShowMessageRequestParams): Promise<{ title: string } | null> {
  // Deny is the close affordance (Escape and the dialog's close answer it), so VS Code adds no extra
  // "Cancel" button that would be a second Deny looking different (R-W3).
  const proposal = params.soba;
  if (proposal?.path !== undefined && proposal.proposed !== undefined) {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    // A diff that cannot open must not hide the question: the dialog still shows the change as text.
    await showProposedDiff(root, proposal.path, proposal.proposed).catch(() => undefined);
  }
  const actions = (params.actions ?? []).map((a) => (a.title === 'Deny' ? { ...a, isCloseAffordance: true } : a));
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
