// startServer spawns a soba-lsp binary and connects to it with
// vscode-languageserver-protocol's stdio connection, the protocol layer that
// vscode-languageclient itself runs on, then wires the extension's Frontend
// and request handlers to it exactly as the extension does.
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  createProtocolConnection,
  InitializeRequest,
  StreamMessageReader,
  StreamMessageWriter,
  type InitializeResult,
  type ProtocolConnection,
} from 'vscode-languageserver-protocol/node';
import { window } from '../fake/vscode';
import { Frontend } from '../../src/frontend';
import { executeCommandLink, type ServerLink } from '../../src/server';
import { SidebarModel } from '../../src/sidebar/model';
import { BudgetStatusBar } from '../../src/statusBar';
import type { OutputLike } from '../../src/commands';

export interface Running {
  conn: ProtocolConnection;
  child: ChildProcess;
  init: InitializeResult;
  link: ServerLink;
  frontend: Frontend;
  model: SidebarModel;
  status: BudgetStatusBar;
  output: OutputLike & { lines: string[] };
  workspace: string;
  stderr: string[];
  stop(): Promise<void>;
}

/** makeWorkspace writes a workspace whose config points the model at the fake model server (when given). */
export function makeWorkspace(fakeModelURL?: string): string {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-vscode-it-'));
  fs.mkdirSync(path.join(ws, '.soba'));
  const config: Record<string, unknown> = {
    compaction: { keepRecentTokens: 200, minReclaimableTokens: 100, minSavingsRatio: 0.1, timeoutMs: 15000 },
    tools: { approval: 'auto' },
  };
  if (fakeModelURL) {
    config.model = { provider: 'openai', baseURL: fakeModelURL, name: 'fake-model', apiKeyEnv: 'SOBA_TEST_API_KEY', contextWindow: 65000, maxOutputTokens: 8000 };
  }
  fs.writeFileSync(path.join(ws, '.soba/config.json'), JSON.stringify(config, null, 2));
  // Long enough that the turn which reads it leaves history worth compacting.
  const body = Array.from({ length: 120 }, (_, i) => `- Note ${i + 1}: the parser keeps token counts per entry and the budget is checked before each inference.`).join('\n');
  fs.writeFileSync(path.join(ws, 'notes.md'), `# Notes\n\nThe test reads this file.\n\n${body}\n`);
  return ws;
}

export async function startServer(binary: string, workspace: string, initializationOptions: object = {}): Promise<Running> {
  const stderr: string[] = [];
  const child = spawn(binary, [], { cwd: workspace, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d) => stderr.push(String(d)));
  const conn = createProtocolConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  const output = window.createOutputChannel('SOBA') as unknown as OutputLike & { lines: string[] };
  const model = new SidebarModel();
  const status = new BudgetStatusBar();
  status.setConnected(true);
  const frontend = new Frontend(output, model, status, () => {}, () => conn);
  frontend.attach(conn);
  for (const [method, handler] of Object.entries(frontend.requestHandlers())) conn.onRequest(method, handler);
  conn.onNotification('window/logMessage', () => {});
  conn.onNotification('window/showMessage', (p: { type: number; message: string }) => {
    // As vscode-languageclient does: by message type.
    void (p.type === 1 ? window.showErrorMessage(p.message) : p.type === 2 ? window.showWarningMessage(p.message) : window.showInformationMessage(p.message));
  });
  conn.listen();
  const init = await conn.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: `file://${workspace}`,
    workspaceFolders: [{ uri: `file://${workspace}`, name: path.basename(workspace) }],
    clientInfo: { name: 'soba-vscode integration test' },
    capabilities: { window: { workDoneProgress: true, showMessage: {} }, workspace: { configuration: false } },
    // The tests' workspaces are the user's own, a trusted folder (as Workspace Trust off says); the R-W5
    // tests pass workspaceTrusted: false.
    initializationOptions: { workspaceTrusted: true, ...initializationOptions },
  });
  await conn.sendNotification('initialized', {});
  const link = executeCommandLink(() => ({ sendRequest: (m, p) => conn.sendRequest(m, p) }));
  return {
    conn, child, init, link, frontend, model, status, output, workspace, stderr,
    async stop() {
      try {
        await Promise.race([conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 3000))]);
        await conn.sendNotification('exit');
      } catch {
        // already gone
      }
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const t = setTimeout(() => {
          child.kill('SIGKILL');
          resolve();
        }, 3000);
        child.on('exit', () => {
          clearTimeout(t);
          resolve();
        });
      });
      conn.dispose();
      // The workspace (and the sessions the server wrote in it) goes with the server: a run leaves nothing in /tmp.
      fs.rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** waitFor polls until check returns a truthy value or the time is up. */
export async function waitFor<T>(what: string, check: () => T | undefined | false, ms = 15000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
