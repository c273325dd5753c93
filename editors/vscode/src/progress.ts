// BarrierProgress shows every server work-done progress (the compaction
// barrier, PROTOCOL.md "$/progress") as a cancellable notification.
// vscode-languageclient 9 shows $/progress only in the status bar
// (ProgressLocation.Window), where it has no cancel button; the extension
// takes over window/workDoneProgress/create and renders it itself.
// Cancelling sends window/workDoneProgress/cancel, which cancels the
// compaction on the server.
import * as vscode from 'vscode';
import {
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  type ProgressToken,
  type ProgressType,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from 'vscode-languageserver-protocol';

/** ProgressHost is the part of LanguageClient / ProtocolConnection used here. */
export interface ProgressHost {
  onProgress<P>(type: ProgressType<P>, token: ProgressToken, handler: (value: P) => void): { dispose(): void };
  sendNotification(type: typeof WorkDoneProgressCancelNotification.type, params: { token: ProgressToken }): Promise<void> | void;
}

type Value = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

interface Running {
  sub: { dispose(): void };
  progress?: vscode.Progress<{ message?: string; increment?: number }>;
  reported: number;
  finish?: () => void;
  ended: boolean;
  /** Values that arrived before withProgress handed over its reporter. */
  early: Value[];
}

export class BarrierProgress {
  private running = new Map<ProgressToken, Running>();

  /** onEnd receives the end message (the R-B3 result line) of each progress. */
  constructor(private readonly host: () => ProgressHost | undefined, private readonly onEnd: (message: string) => void = () => {}) {}

  /** create is the handler of window/workDoneProgress/create. */
  create = (params: { token: ProgressToken }): null => {
    const host = this.host();
    if (!host) return null;
    const token = params.token;
    this.running.get(token)?.sub.dispose();
    const run: Running = { sub: { dispose() {} }, reported: 0, ended: false, early: [] };
    run.sub = host.onProgress(WorkDoneProgress.type, token, (v: Value) => this.handle(token, run, v));
    this.running.set(token, run);
    return null;
  };

  private handle(token: ProgressToken, run: Running, v: Value): void {
    switch (v.kind) {
      case 'begin':
        this.begin(token, run, v);
        break;
      case 'report':
        if (run.progress) this.report(run, v);
        else run.early.push(v);
        break;
      case 'end':
        run.ended = true;
        if (v.message) this.onEnd(v.message);
        this.finish(token, run);
        break;
    }
  }

  private begin(token: ProgressToken, run: Running, v: WorkDoneProgressBegin): void {
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: v.title, cancellable: v.cancellable === true },
      (progress, cancel) =>
        new Promise<void>((resolve) => {
          if (run.ended) return resolve();
          run.progress = progress;
          run.finish = resolve;
          cancel.onCancellationRequested(() => {
            void this.host()?.sendNotification(WorkDoneProgressCancelNotification.type, { token });
          });
          this.report(run, v);
          for (const e of run.early.splice(0)) if (e.kind === 'report') this.report(run, e);
        }),
    );
  }

  private report(run: Running, v: WorkDoneProgressBegin | WorkDoneProgressReport): void {
    if (!run.progress) return;
    if (typeof v.percentage === 'number') {
      const pct = Math.max(0, Math.min(100, v.percentage));
      const delta = Math.max(0, pct - run.reported);
      run.reported += delta;
      run.progress.report({ message: v.message ?? `${Math.round(pct)}%`, increment: delta });
    } else if (v.message) {
      run.progress.report({ message: v.message });
    }
  }

  private finish(token: ProgressToken, run: Running): void {
    run.sub.dispose();
    run.finish?.();
    this.running.delete(token);
  }

  /** dispose ends every shown progress (the server stopped). */
  dispose(): void {
    for (const [token, run] of [...this.running]) this.finish(token, run);
  }
}
