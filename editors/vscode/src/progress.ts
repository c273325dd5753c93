// BarrierProgress shows every server work-done progress (the compaction
// barrier, PROTOCOL.md "$/progress") as a cancellable notification.
// vscode-languageclient 9 shows $/progress only in the status bar
// (ProgressLocation.Window), where it has no cancel button; the extension
// takes over window/workDoneProgress/create and renders it itself.
// Cancelling sends window/workDoneProgress/cancel, which cancels the
// compaction on the server.
//
// A summary call gives no real progress for seconds (minutes with a local
// model), so the notification stays indeterminate and shows the server's
// message as it is, with the time elapsed, ticking every second ("waiting
// for the summary model · 12 s"). A percentage counts as real progress only
// once it has moved from the first one sent; from then on the bar fills.
import * as vscode from 'vscode';
import { elapsed, withoutElapsed } from './format';
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
  /** The server's latest message, shown as it is. */
  message: string;
  /** The first percentage sent; progress is real once another one arrives. */
  firstPct?: number;
  pct?: number;
  started: number;
  tick?: ReturnType<typeof setInterval>;
}

/** TICK_MS is how often the elapsed time is redrawn. */
export const TICK_MS = 1000;

export class BarrierProgress {
  private running = new Map<ProgressToken, Running>();

  /** onEnd receives the end message (the R-B3 result line) of each progress. */
  constructor(
    private readonly host: () => ProgressHost | undefined,
    private readonly onEnd: (message: string) => void = () => {},
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** create is the handler of window/workDoneProgress/create. */
  create = (params: { token: ProgressToken }): null => {
    const host = this.host();
    if (!host) return null;
    const token = params.token;
    this.running.get(token)?.sub.dispose();
    const run: Running = { sub: { dispose() {} }, reported: 0, ended: false, early: [], message: '', started: this.now() };
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
          run.tick = setInterval(() => this.draw(run, 0), TICK_MS);
        }),
    );
  }

  private report(run: Running, v: WorkDoneProgressBegin | WorkDoneProgressReport): void {
    // The server's message carries its own elapsed time (soba/compaction's
    // Message); this notification ticks its own, so the time is said once.
    if (v.message) run.message = withoutElapsed(v.message);
    let increment = 0;
    if (typeof v.percentage === 'number') {
      const pct = Math.max(0, Math.min(100, v.percentage));
      if (run.firstPct === undefined) run.firstPct = pct;
      else if (pct !== run.firstPct || run.pct !== undefined) {
        run.pct = pct;
        increment = Math.max(0, pct - run.reported);
        run.reported += increment;
      }
    }
    this.draw(run, increment);
  }

  /** draw shows the message, the percentage once it is real, and the time elapsed. */
  private draw(run: Running, increment: number): void {
    if (!run.progress) return;
    const parts = [run.message || 'waiting', run.pct !== undefined ? `${Math.round(run.pct)}%` : '', elapsed(this.now() - run.started)].filter((p) => p !== '');
    run.progress.report(increment > 0 ? { message: parts.join(' · '), increment } : { message: parts.join(' · ') });
  }

  private finish(token: ProgressToken, run: Running): void {
    if (run.tick) clearInterval(run.tick);
    run.sub.dispose();
    run.finish?.();
    this.running.delete(token);
  }

  /** dispose ends every shown progress (the server stopped). */
  dispose(): void {
    for (const [token, run] of [...this.running]) this.finish(token, run);
  }
}
