// Frontend is the editor side of one soba-lsp connection: it turns the
// server's notifications and requests into the status bar, the sidebar, the
// SOBA output channel, progress notifications and modal approvals. The
// extension attaches it to vscode-languageclient's LanguageClient; the
// integration test attaches the same code to a vscode-jsonrpc connection to
// the real binary.
import { showMessageRequestModal } from './approvals';
import { resultLogFor, resultNoticeFor, type OutputLike, type ResultLog, type ResultNotice } from './commands';
import { BarrierProgress, type ProgressHost } from './progress';
import { Notification, type AgentEvent, type Budget, type CompactionEvent } from './protocol';
import type { SidebarModel } from './sidebar/model';

/** NotificationHost is the part of LanguageClient / ProtocolConnection that delivers notifications. */
export interface NotificationHost {
  onNotification(method: string, handler: (params: any) => void): { dispose(): void };
}

/** StatusSink is what the status bar offers (BudgetStatusBar). */
export interface StatusSink {
  setBudget(b: Budget): void;
  setBarrier(b: { operationId: string; trigger: string; percentage: number } | undefined): void;
}

export class Frontend {
  readonly log: ResultLog;
  readonly notice: ResultNotice;
  readonly progress: BarrierProgress;

  constructor(
    private readonly output: OutputLike,
    private readonly model: SidebarModel,
    private readonly status: StatusSink,
    private readonly changed: () => void,
    progressHost: () => ProgressHost | undefined,
    private readonly baselines?: { sawCall(name: string, args: Record<string, unknown> | undefined): void },
  ) {
    this.log = resultLogFor(output);
    this.notice = resultNoticeFor(output);
    // The progress end message is the R-B3 line, the same as soba/compaction's
    // end; ResultLog writes whichever comes first, by operation id when known.
    this.progress = new BarrierProgress(progressHost, () => {});
  }

  /** attach registers the soba/* notification handlers on a connection. */
  attach(host: NotificationHost): { dispose(): void }[] {
    return [
      host.onNotification(Notification.budget, (b: Budget) => this.budget(b)),
      host.onNotification(Notification.compaction, (e: CompactionEvent) => this.compaction(e)),
      host.onNotification(Notification.event, (e: AgentEvent) => this.event(e)),
    ];
  }

  /**
   * requestHandlers are the server→client requests the extension answers
   * itself instead of vscode-languageclient: progress creation (shown as a
   * cancellable notification) and showMessageRequest (shown modal).
   */
  requestHandlers(): Record<string, (params: any) => unknown> {
    return {
      'window/workDoneProgress/create': this.progress.create,
      'window/showMessageRequest': showMessageRequestModal,
    };
  }

  budget(b: Budget): void {
    this.status.setBudget(b);
    this.model.applyBudget(b);
    this.changed();
  }

  compaction(e: CompactionEvent): void {
    this.model.applyCompaction(e);
    if (e.phase === 'end') {
      this.status.setBarrier(undefined);
      this.log.write(e);
      this.notice.announce(e);
    } else {
      this.status.setBarrier({ operationId: e.operationId, trigger: e.trigger, percentage: e.percentage ?? 0 });
    }
    this.changed();
  }

  event(e: AgentEvent): void {
    if (e.type === 'tool_call' && e.name && this.baselines) {
      // Before the model sees the call: the file as it is now is the "before" of Open diff.
      let args: unknown = e.arguments;
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          args = undefined;
        }
      }
      this.baselines.sawCall(e.name, typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : undefined);
    }
    this.model.applyEvent(e);
    if (e.type === 'turn_end' && e.outcome === 'failed') {
      // The server also sends the failure as window/showMessage (for every client), which VS Code shows;
      // the chat shows it as a card with its actions, the output keeps it. One notification, not two.
      this.output.appendLine(`SOBA: turn ${e.turnId} failed: ${e.error ?? 'unknown error'}`);
    } else if (e.type === 'turn_end') {
      this.output.appendLine(`SOBA: turn ${e.turnId} ${e.outcome ?? 'ended'}`);
    }
    this.changed();
  }
}
