// Pure formatting of the budget and compaction state for the status bar, the
// sidebar and messages. Nothing here imports vscode, so it is unit-tested as is.
import type { Budget, CapsuleListItem, CompactionEvent, CompactionResult, SessionListItem } from './protocol';

/** BudgetLevel is the colour class of the status bar item. */
export type BudgetLevel = 'normal' | 'warning' | 'error';

/**
 * NEAR_HARD_RATIO is the share of the hard limit from which the budget counts
 * as "near the hard limit" (error colour): at that point the next tool result
 * can force a fail-closed hard_limit compaction (R-G4).
 */
export const NEAR_HARD_RATIO = 0.95;

/**
 * budgetLevel maps a budget to its colour class (R-O1): `error` at or above
 * NEAR_HARD_RATIO of the hard limit, `warning` past the soft limit, else
 * `normal`. A budget without limits (0) is `normal`.
 */
export function budgetLevel(b: Pick<Budget, 'effectiveTokens' | 'softLimit' | 'hardLimit'>): BudgetLevel {
  const eff = b.effectiveTokens;
  if (b.hardLimit > 0 && eff >= Math.floor(b.hardLimit * NEAR_HARD_RATIO)) return 'error';
  if (b.softLimit > 0 && eff > b.softLimit) return 'warning';
  return 'normal';
}

/** ThemeColor IDs of each level (undefined: the default colour). */
export const LEVEL_BACKGROUND: Record<BudgetLevel, string | undefined> = {
  normal: undefined,
  warning: 'statusBarItem.warningBackground',
  error: 'statusBarItem.errorBackground',
};

/** compactTokens writes a token count briefly: 980, 45.2k, 128k, 1.05M. */
export function compactTokens(n: number): string {
  if (!Number.isFinite(n)) return '?';
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  if (a < 1000) return `${sign}${Math.round(a)}`;
  if (a < 100_000) return `${sign}${trimZero((a / 1000).toFixed(1))}k`;
  if (a < 999_500) return `${sign}${Math.round(a / 1000)}k`;
  return `${sign}${trimZero((a / 1_000_000).toFixed(2))}M`;
}

function trimZero(s: string): string {
  return s.replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1');
}

/** groupTokens writes a count with thousands separators: 45,210. */
export function groupTokens(n: number): string {
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** percent writes a 0..1 ratio as a whole percentage: 67%. */
export function percent(ratio: number): string {
  if (!Number.isFinite(ratio)) return '?%';
  // Rounded, as the server's result line does (0.7856 → 79%).
  return `${Math.round(ratio * 100)}%`;
}

/** SOURCE_LABEL names the measurement source for people. */
export const SOURCE_LABEL: Record<string, string> = {
  provider_usage: 'provider usage',
  estimated: 'estimated',
};

/** StatusView is everything the status bar item shows. */
export interface StatusView {
  text: string;
  tooltip: string;
  level: BudgetLevel;
}

/** BarrierState is a running compaction barrier as seen from soba/compaction. */
export interface BarrierState {
  operationId: string;
  trigger: string;
  percentage: number;
}

/**
 * statusView builds the status bar text and tooltip. While a barrier runs the
 * text is `compacting 82%` (R-B3); otherwise `45.2k / 57k` tokens against the
 * hard limit. The tooltip names the soft threshold and the measurement source.
 */
export function statusView(budget: Budget | undefined, barrier?: BarrierState, connected = true): StatusView {
  if (!connected) {
    return { text: '$(debug-disconnect) SOBA', tooltip: 'SOBA: soba-lsp is not running. Click for the output.', level: 'normal' };
  }
  if (barrier) {
    const pct = Math.max(0, Math.min(100, Math.round(barrier.percentage)));
    return {
      text: `$(sync~spin) compacting ${pct}%`,
      tooltip: `Compacting context before response · ${pct}% (trigger ${barrier.trigger})`,
      level: budget ? budgetLevel(budget) : 'normal',
    };
  }
  if (!budget) {
    return { text: '$(dashboard) SOBA', tooltip: 'SOBA: waiting for the first budget from soba-lsp', level: 'normal' };
  }
  return {
    text: `$(dashboard) ${compactTokens(budget.effectiveTokens)} / ${compactTokens(budget.hardLimit)}`,
    tooltip: budgetTooltip(budget),
    level: budgetLevel(budget),
  };
}

/** budgetTooltip is the multi-line description of a budget (R-O1). */
export function budgetTooltip(b: Budget): string {
  const lines = [
    `SOBA context: ${groupTokens(b.effectiveTokens)} of ${groupTokens(b.hardLimit)} tokens (hard limit)`,
    `Soft threshold: ${groupTokens(b.softLimit)} tokens`,
    `Measured by: ${SOURCE_LABEL[b.source] ?? b.source}`,
    `Context window ${groupTokens(b.contextWindow)} − output ${groupTokens(b.maxOutputTokens)} − reserve ${groupTokens(b.safetyReserveTokens)}`,
    `Auto-compact: ${b.autoCompact ? 'on' : 'off'} · state: ${b.state}`,
  ];
  if (b.cachedTokens > 0) lines.push(`Prompt cache: ${groupTokens(b.cachedTokens)} tokens of the last request`);
  if (b.pending && b.pending.length > 0) lines.push(`Pending: ${b.pending.join(', ')}`);
  if (b.lastCompaction?.line) lines.push(`Last: ${b.lastCompaction.line}`);
  return lines.join('\n');
}

/** budgetSummary is the one-line budget shown by "SOBA: Show Budget". */
export function budgetSummary(b: Budget): string {
  const parts = [
    `${groupTokens(b.effectiveTokens)} / ${groupTokens(b.hardLimit)} tokens`,
    `soft ${groupTokens(b.softLimit)}`,
    SOURCE_LABEL[b.source] ?? b.source,
    `auto-compact ${b.autoCompact ? 'on' : 'off'}`,
    b.state,
  ];
  if (b.pending && b.pending.length > 0) parts.push(`pending ${b.pending.join(', ')}`);
  return `SOBA budget · ${parts.join(' · ')}`;
}

/**
 * capsuleListLines are the lines of "SOBA: List Capsules" (/capsule list),
 * newest first, id first so it can be copied into /capsule export.
 */
export function capsuleListLines(list: CapsuleListItem[]): string[] {
  return newestFirst(list, (c) => c.createdAt).map((c) =>
    [c.checkpointId, c.trigger, c.quality || '—', c.createdAt, c.title ? `"${c.title}"` : ''].filter((x) => x !== '').join(' · '),
  );
}

/** sessionListLines are the lines of "SOBA: List Sessions" (/session list), most recently updated first. */
export function sessionListLines(list: SessionListItem[], current?: string): string[] {
  return newestFirst(list, (s) => s.updatedAt).map(
    (s) => `${s.sessionId} · ${s.entries} entries · ${s.updatedAt} · ${s.path}${s.sessionId === current ? ' · current' : ''}`,
  );
}

function newestFirst<T>(list: T[], at: (x: T) => string): T[] {
  return [...list].sort((a, b) => (at(a) < at(b) ? 1 : at(a) > at(b) ? -1 : 0));
}

/** CompactionRow is one line of the sidebar's latest compactions. */
export interface CompactionRow {
  operationId: string;
  trigger: string;
  outcome: string;
  beforeAfter: string;
  reclaimed: string;
  checkpointId: string;
  quality: string;
  line: string;
}

/** compactionRow turns a terminal compaction into a sidebar row; its line is the server's R-B3 line. */
export function compactionRow(r: Partial<CompactionResult> & { operationId?: string }): CompactionRow {
  return {
    operationId: r.operationId ?? '',
    trigger: r.trigger ?? '',
    outcome: r.outcome ?? '',
    beforeAfter:
      r.tokensBefore !== undefined && r.tokensAfter !== undefined
        ? `${groupTokens(r.tokensBefore)} → ${groupTokens(r.tokensAfter)}`
        : '',
    reclaimed: r.reclaimedRatio !== undefined ? percent(r.reclaimedRatio) : '',
    checkpointId: r.checkpointId ?? '',
    quality: r.quality || '—',
    line: r.line ?? '',
  };
}

/** isEnd reports whether a soba/compaction notification is terminal. */
export function isEnd(e: CompactionEvent): boolean {
  return e.phase === 'end';
}

/** GaugeView is the sidebar budget gauge, as shares of the hard limit (0..1). */
export interface GaugeView {
  effective: number;
  soft: number;
  level: BudgetLevel;
  label: string;
}

/** gaugeView places effective and soft against the hard limit. */
export function gaugeView(b: Budget): GaugeView {
  const hard = b.hardLimit > 0 ? b.hardLimit : Math.max(1, b.effectiveTokens);
  const clamp = (x: number) => Math.max(0, Math.min(1, x));
  return {
    effective: clamp(b.effectiveTokens / hard),
    soft: clamp(b.softLimit / hard),
    level: budgetLevel(b),
    label: `${groupTokens(b.effectiveTokens)} / ${groupTokens(b.hardLimit)} (soft ${groupTokens(b.softLimit)}, ${SOURCE_LABEL[b.source] ?? b.source})`,
  };
}
