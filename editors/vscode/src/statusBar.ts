// BudgetStatusBar is the status bar item: effective tokens against the hard
// limit, coloured past the soft limit and near the hard limit, and
// `compacting 82%` while a barrier runs. Fed by soba/budget and
// soba/compaction; clicking it runs "SOBA: Show Budget".
import * as vscode from 'vscode';
import { LEVEL_BACKGROUND, statusView, type BarrierState } from './format';
import type { Budget } from './protocol';

export const SHOW_BUDGET_COMMAND = 'soba-vscode.showBudget';

export class BudgetStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private budget?: Budget;
  private barrier?: BarrierState;
  private connected = false;

  constructor() {
    this.item = vscode.window.createStatusBarItem('soba.budget', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'SOBA Budget';
    this.item.command = SHOW_BUDGET_COMMAND;
    this.render();
    this.item.show();
  }

  setBudget(b: Budget): void {
    this.budget = b;
    if (b.state !== 'compacting') this.barrier = undefined;
    this.render();
  }

  setBarrier(b: BarrierState | undefined): void {
    this.barrier = b;
    this.render();
  }

  setConnected(ok: boolean): void {
    this.connected = ok;
    this.render();
  }

  private render(): void {
    const v = statusView(this.budget, this.barrier, this.connected);
    this.item.text = v.text;
    this.item.tooltip = v.tooltip;
    const bg = LEVEL_BACKGROUND[v.level];
    this.item.backgroundColor = bg ? new vscode.ThemeColor(bg) : undefined;
    this.item.command = this.connected ? SHOW_BUDGET_COMMAND : 'soba-vscode.showOutput';
  }

  dispose(): void {
    this.item.dispose();
  }
}
