// Approvals: the server asks through window/showMessageRequest whether a tool
// may run (tools.approval "ask"). vscode-languageclient shows such requests
// as a plain toast, which is easy to miss while the turn waits; the extension
// replaces that handler with a modal dialog. Dismissing it answers null,
// which the server takes as Deny.
import * as vscode from 'vscode';

export interface ShowMessageRequestParams {
  type: number;
  message: string;
  actions?: { title: string }[];
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
