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
 * NEAR_HARD_RATIO of the hard limit, `warning` from the soft limit on, else
 * `normal`. A budget without limits (0) is `normal`.
 */
export function budgetLevel(b: Pick<Budget, 'effectiveTokens' | 'softLimit' | 'hardLimit'>): BudgetLevel {
  const eff = b.effectiveTokens;
  if (b.hardLimit > 0 && eff >= Math.floor(b.hardLimit * NEAR_HARD_RATIO)) return 'error';
  if (b.softLimit > 0 && eff >= b.softLimit) return 'warning';
  return 'normal';
}

/** ThemeColor IDs of each level (undefined: the default colour). */
export const LEVEL_BACKGROUND: Record<BudgetLevel, string | undefined> = {
  normal: undefined,
  warning: 'statusBarItem.warningBackground',
  error: 'statusBarItem.errorBackground',
};

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
 * displayTokens writes a token count the way both editors do: 980, 14.0k,
 * 128.0k, 1.05M (one decimal in thousands, so a number's width does not jump).
 */
export function displayTokens(n: number): string {
  if (!Number.isFinite(n)) return '?';
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  if (a < 1000) return `${sign}${Math.round(a)}`;
  if (a < 999_950) return `${sign}${(a / 1000).toFixed(1)}k`;
  return `${sign}${(a / 1_000_000).toFixed(2)}M`;
}

/**
 * budgetDisplay is "14.0k / 17.0k (82%)": effective tokens against the hard
 * limit, the share rounded down. The server's Budget `display` is used as is
 * (docs/protocol.md), so both editors write the same numbers.
 */
export function budgetDisplay(b: Budget): string {
  // A server older than docs/protocol.md's `display` sends none: the same text is made here.
  if (typeof b.display === 'string' && b.display.trim() !== '') return b.display.trim();
  const pct = b.hardLimit > 0 ? ` (${Math.floor((b.effectiveTokens / b.hardLimit) * 100)}%)` : '';
  return `${displayTokens(b.effectiveTokens)} / ${displayTokens(b.hardLimit)}${pct}`;
}

/**
 * statusView builds the status bar text and tooltip: "SOBA 14.0k / 17.0k
 * (82%)", or "SOBA compacting" with a spinner while a barrier runs (R-B3).
 * The tooltip names the soft threshold and the measurement source (R-O1).
 */
export function statusView(budget: Budget | undefined, barrier?: BarrierState, connected = true): StatusView {
  if (!connected) {
    return { text: '$(debug-disconnect) SOBA', tooltip: 'SOBA: soba-lsp is not running. Click for the output.', level: 'normal' };
  }
  if (barrier) {
    return {
      text: `$(sync~spin) SOBA compacting`,
      tooltip: `Compacting context (trigger ${barrier.trigger.replace(/_/g, ' ')})${budget ? `\n${budgetTooltip(budget)}` : ''}`,
      level: budget ? budgetLevel(budget) : 'normal',
    };
  }
  if (!budget) {
    return { text: 'SOBA', tooltip: 'SOBA: waiting for the first budget from soba-lsp', level: 'normal' };
  }
  return {
    // A shield while the repository's settings are ignored (R-W5): the tooltip says which and how to trust.
    text: `${budget.repositorySettingsIgnored?.length ? '$(workspace-untrusted) ' : ''}SOBA ${budgetDisplay(budget)}`,
    tooltip: budgetTooltip(budget),
    level: budgetLevel(budget),
  };
}

/** relativeTime says how long ago a moment was, to the second: "12 s ago", "4 min 3 s ago", "2 h 5 min ago". */
export function relativeTime(at: number | string, now = Date.now()): string {
  const t = typeof at === 'number' ? at : Date.parse(at);
  if (!Number.isFinite(t)) return typeof at === 'string' ? at : '';
  const s = Math.round((now - t) / 1000);
  if (s < 0) return 'in the future';
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${m % 60} min ago`;
  const d = Math.floor(h / 24);
  return `${d} day${d === 1 ? '' : 's'} ${h % 24} h ago`;
}

/** elapsed writes a duration in whole seconds: "12 s", "1 min 05 s". */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * withoutElapsed drops a trailing elapsed time written as elapsed() writes it
 * ("waiting for the summary model · 2 s" → "waiting for the summary model"),
 * so a view that ticks its own time does not say it twice.
 */
export function withoutElapsed(message: string): string {
  return message.replace(/ · (?:\d+ min \d{2} s|\d+ s)$/, '');
}

/** sentence makes a reason start with a capital and carry no trailing period. */
function sentence(s: string): string {
  const t = s.trim().replace(/\.+$/, '');
  return t ? t[0].toUpperCase() + t.slice(1) : t;
}

/**
 * outcomeWords says what a compaction that did not complete did, in words:
 * "Skipped: nothing old enough to compact", never "844 → 0" (R-B4).
 */
export function outcomeWords(r: { outcome?: string; reason?: string }): string {
  const why = r.reason ? `: ${sentence(r.reason).replace(/^./, (c) => c.toLowerCase())}` : '';
  switch (r.outcome) {
    case 'skipped':
      return `Compaction skipped${why || ': nothing to compact'}`;
    case 'cancelled':
      return `Compaction cancelled${why}`;
    case 'stale':
      return `Compaction discarded${why || ': the session moved on while it ran'}`;
    case 'failed':
      return `Compaction failed${why}`;
    default:
      return `Compaction ${r.outcome ?? 'ended'}${why}`;
  }
}

/** compactionMarkerText is the conversation's marker: "Context compacted · 13,460 → 820 tokens". */
export function compactionMarkerText(r: { outcome?: string; reason?: string; tokensBefore?: number; tokensAfter?: number; quality?: string }): string {
  if (r.outcome !== 'completed') return outcomeWords(r);
  const counts = r.tokensBefore !== undefined && r.tokensAfter !== undefined ? ` · ${groupTokens(r.tokensBefore)} → ${groupTokens(r.tokensAfter)} tokens` : '';
  return `Context compacted${counts}${r.quality === 'degraded' ? ' · fallback capsule' : ''}`;
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
  const ignored = repositorySettingsIgnoredText(b.repositorySettingsIgnored);
  if (ignored) lines.push(ignored);
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
  if (b.repositorySettingsIgnored?.length) parts.push(`repository settings ignored until trusted: ${b.repositorySettingsIgnored.join(', ')}`);
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

/**
 * sessionListLines are the lines of "SOBA: List Sessions", most recently
 * updated first: the id (to copy into /session resume), the first request
 * when there is one, the entries, the update time, the path.
 */
export function sessionListLines(list: SessionListItem[], current?: string): string[] {
  return newestFirst(list, (s) => s.updatedAt).map((s) =>
    [s.sessionId, s.title ? `"${s.title}"` : '', `${s.entries} entries`, s.updatedAt, s.path, s.sessionId === current ? 'current' : ''].filter((x) => x !== '').join(' · '),
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

/**
 * repositorySettingsIgnoredText says which repository settings the server
 * ignores until the workspace is trusted ('' when none): the status bar's
 * tooltip and the budget view show it.
 */
export function repositorySettingsIgnoredText(keys: readonly string[] | undefined): string {
  if (!keys || keys.length === 0) return '';
  return `Ignored until you trust this workspace: ${keys.join(', ')} (set by the repository). Trust it with "Workspaces: Manage Workspace Trust".`;
}
