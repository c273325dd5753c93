// ServerLink is how the extension talks to soba-lsp: the language client in
// the editor, a vscode-jsonrpc connection in the integration tests. Both are
// the same JSON-RPC protocol layer (vscode-jsonrpc's sendRequest).
import type { ServerCommandId } from './protocol';

export interface ServerLink {
  /** execute runs a server command through workspace/executeCommand with `arguments: [args]`. */
  execute<T = unknown>(command: ServerCommandId, args: object): Promise<T>;
}

/** RequestSender is the slice of LanguageClient / ProtocolConnection that ServerLink needs. */
export interface RequestSender {
  sendRequest(method: string, params: unknown): Promise<unknown>;
}

/** executeCommandLink makes a ServerLink over any JSON-RPC request sender. */
export function executeCommandLink(sender: () => RequestSender | undefined): ServerLink {
  return {
    async execute<T>(command: ServerCommandId, args: object): Promise<T> {
      const s = sender();
      if (!s) throw new ServerNotRunning();
      return (await s.sendRequest('workspace/executeCommand', { command, arguments: [args] })) as T;
    },
  };
}

/** ServerNotRunning is raised when a command runs while soba-lsp is not started. */
export class ServerNotRunning extends Error {
  constructor() {
    super('SOBA: soba-lsp is not running. Run "SOBA: Restart Server" or check the "SOBA" output.');
    this.name = 'ServerNotRunning';
  }
}

/** errorMessage extracts a readable message from a JSON-RPC ResponseError or anything thrown. */
export function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) {
    const m = String((err as { message: unknown }).message);
    const code = (err as { code?: unknown }).code;
    return typeof code === 'number' && code !== 0 ? `${m} (${code})` : m;
  }
  return String(err);
}
