import { describe, expect, it } from 'vitest';
import { budgetDisplay, budgetLevel, compactionMarkerText, displayTokens, elapsed, gaugeView, groupTokens, outcomeWords, relativeTime, statusView, budgetSummary } from '../../src/format';
import type { Budget } from '../../src/protocol';

/** budget is the default budget of SPEC §6 (hard 48808, soft 39046, R-S2) with overrides. */
function budget(over: Partial<Budget> = {}): Budget {
  return {
    effectiveTokens: 12400,
    hardLimit: 48808,
    softLimit: 39046,
    contextWindow: 65000,
    maxOutputTokens: 8000,
    safetyReserveTokens: 8192,
    source: 'estimated',
    autoCompact: true,
    pending: [],
    state: 'idle',
    lastCompaction: null,
    cachedTokens: 0,
    display: '12.4k / 48.8k (25%)',
    ...over,
  };
}

describe('budgetLevel: colour thresholds (R-O1, R-G5)', () => {
  const cases: [string, number, ReturnType<typeof budgetLevel>][] = [
    ['empty', 0, 'normal'],
    ['below soft', 39045, 'normal'],
    ['at the soft limit, where auto-compact may run (R-G5)', 39046, 'warning'],
    ['one past soft', 39047, 'warning'],
    ['just below 95% of hard', 46366, 'warning'],
    ['95% of hard (floor 46367)', 46367, 'error'],
    ['at hard', 48808, 'error'],
    ['over hard', 60000, 'error'],
  ];
  it.each(cases)('%s: %d tokens → %s', (_name, eff, want) => {
    expect(budgetLevel(budget({ effectiveTokens: eff }))).toBe(want);
  });

  it('a budget without limits stays normal', () => {
    expect(budgetLevel({ effectiveTokens: 5000, softLimit: 0, hardLimit: 0 })).toBe('normal');
  });

  it('a soft limit above 95% of hard goes straight to error', () => {
    expect(budgetLevel({ effectiveTokens: 970, softLimit: 990, hardLimit: 1000 })).toBe('error');
  });
});

describe('displayTokens and groupTokens: one number format in both editors', () => {
  it.each([
    [0, '0'],
    [980, '980'],
    [1000, '1.0k'],
    [12400, '12.4k'],
    [14030, '14.0k'],
    [17000, '17.0k'],
    [48808, '48.8k'],
    [99960, '100.0k'],
    [128000, '128.0k'],
    [1048576, '1.05M'],
    [2000000, '2.00M'],
  ])('displayTokens(%d) = %s', (n, want) => expect(displayTokens(n)).toBe(want));

  it('groups thousands', () => {
    expect(groupTokens(45210)).toBe('45,210');
    expect(groupTokens(1234567)).toBe('1,234,567');
    expect(groupTokens(12)).toBe('12');
  });
});

describe('the status shows when the repository\'s settings are ignored (R-W5)', () => {
  it('a shield in the status text, the keys and how to trust in the tooltip and the budget line', () => {
    const b = budget({ repositorySettingsIgnored: ['model.baseURL', 'tools.approval'] });
    const v = statusView(b);
    expect(v.text).toBe('$(workspace-untrusted) SOBA 12.4k / 48.8k (25%)');
    expect(v.tooltip).toContain('Ignored until you trust this workspace: model.baseURL, tools.approval (set by the repository). Trust it with "Workspaces: Manage Workspace Trust".');
    expect(budgetSummary(b)).toContain('repository settings ignored until trusted: model.baseURL, tools.approval');
  });
  it('nothing when none are ignored', () => {
    for (const ignored of [undefined, []]) {
      const v = statusView(budget({ repositorySettingsIgnored: ignored }));
      expect(v.text).toBe('SOBA 12.4k / 48.8k (25%)');
      expect(v.tooltip).not.toContain('trust');
    }
  });
});

describe('statusView: status bar text and tooltip (R-O1, R-B3)', () => {
  it('shows "SOBA effective / hard (share)" (R-O1)', () => {
    const v = statusView(budget({ effectiveTokens: 14000, hardLimit: 17000, softLimit: 13600, display: '14.0k / 17.0k (82%)' }));
    expect(v.text).toBe('SOBA 14.0k / 17.0k (82%)');
    expect(v.level).toBe('warning');
    expect(statusView(budget()).text).toBe('SOBA 12.4k / 48.8k (25%)');
  });

  it("uses the server's display text when the budget carries one, so both editors agree", () => {
    expect(statusView(budget({ display: '14.0k / 17.0k (82%)' } as never)).text).toBe('SOBA 14.0k / 17.0k (82%)');
    expect(budgetDisplay(budget({ display: ' 1.0k / 2.0k (50%) ' }))).toBe('1.0k / 2.0k (50%)');
    // A server without `display`: the same format, the share rounded down as the server does.
    expect(budgetDisplay(budget({ display: undefined as never, effectiveTokens: 16999, hardLimit: 17000 }))).toBe('17.0k / 17.0k (99%)');
  });

  it('names the soft threshold and the measurement source in the tooltip', () => {
    const est = statusView(budget()).tooltip;
    expect(est).toContain('Soft threshold: 39,046 tokens');
    expect(est).toContain('Measured by: estimated');
    expect(est).toContain('12,400 of 48,808 tokens (hard limit)');
    const usage = statusView(budget({ source: 'provider_usage' })).tooltip;
    expect(usage).toContain('Measured by: provider usage');
  });

  it('shows the prompt cache of the last request once a provider reports it', () => {
    expect(statusView(budget()).tooltip).not.toContain('Prompt cache');
    expect(statusView(budget({ cachedTokens: 30720 })).tooltip).toContain('Prompt cache: 30,720 tokens of the last request');
  });

  it('lists pending intents and the last compaction in the tooltip', () => {
    const t = statusView(
      budget({
        pending: ['milestone'],
        lastCompaction: {
          operationId: 'op1', trigger: 'user', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870,
          reclaimedTokens: 30340, reclaimedRatio: 0.671, checkpointId: 'ck_8f2a1c', quality: 'full', durationMs: 900, reason: '',
          line: 'Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c',
        },
      }),
    ).tooltip;
    expect(t).toContain('Pending: milestone');
    expect(t).toContain('Last: Compacted context · user · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c');
  });

  it('reads "SOBA compacting" during a barrier, without a made-up percentage (R-B3)', () => {
    const v = statusView(budget({ state: 'compacting' }), { operationId: 'op', trigger: 'auto_threshold', percentage: 1 });
    expect(v.text).toBe('$(sync~spin) SOBA compacting');
    expect(v.tooltip).toContain('Compacting context (trigger auto threshold)');
    expect(v.tooltip).not.toContain('before response');
  });

  it('keeps the colour of the budget during a barrier', () => {
    expect(statusView(budget({ effectiveTokens: 47000 }), { operationId: 'o', trigger: 'hard_limit', percentage: 10 }).level).toBe('error');
  });

  it('says when there is no budget yet or no server', () => {
    expect(statusView(undefined).text).toBe('SOBA');
    expect(statusView(budget(), undefined, false).text).toBe('$(debug-disconnect) SOBA');
  });
});

describe('budgetSummary and gaugeView', () => {
  it('summarises the budget in one line', () => {
    expect(budgetSummary(budget({ pending: ['turn_complete'] }))).toBe(
      'SOBA budget · 12,400 / 48,808 tokens · soft 39,046 · estimated · auto-compact on · idle · pending turn_complete',
    );
  });
  it('places effective and soft as shares of the hard limit', () => {
    const g = gaugeView(budget({ effectiveTokens: 24404 }));
    expect(g.effective).toBeCloseTo(0.5, 5);
    expect(g.soft).toBeCloseTo(39046 / 48808, 5);
    expect(gaugeView(budget({ effectiveTokens: 90000 })).effective).toBe(1);
  });
});

describe('relativeTime and elapsed: times to the second', () => {
  const now = Date.parse('2026-12-03T10:00:00Z');
  it.each([
    ['2026-12-03T10:00:00Z', 'just now'],
    ['2026-12-03T09:59:48Z', '12 s ago'],
    ['2026-12-03T09:55:57Z', '4 min 3 s ago'],
    ['2026-12-03T07:55:00Z', '2 h 5 min ago'],
    ['2026-12-01T09:00:00Z', '2 days 1 h ago'],
    ['2026-12-03T10:00:30Z', 'in the future'],
    ['not a time', 'not a time'],
  ])('%s → %s', (at, want) => expect(relativeTime(at, now)).toBe(want));
  it.each([
    [0, '0 s'],
    [12_400, '12 s'],
    [65_000, '1 min 05 s'],
  ])('elapsed(%d) = %s', (ms, want) => expect(elapsed(ms)).toBe(want));
});

describe('compaction outcomes in words, never "→ 0" (R-B4)', () => {
  it.each([
    [{ outcome: 'completed', tokensBefore: 13460, tokensAfter: 820, quality: 'full' }, 'Context compacted · 13,460 → 820 tokens'],
    [{ outcome: 'completed', tokensBefore: 13460, tokensAfter: 820, quality: 'degraded' }, 'Context compacted · 13,460 → 820 tokens · fallback capsule'],
    [{ outcome: 'skipped', reason: 'Nothing old enough to compact.', tokensBefore: 844, tokensAfter: 0 }, 'Compaction skipped: nothing old enough to compact'],
    [{ outcome: 'skipped', reason: '' }, 'Compaction skipped: nothing to compact'],
    [{ outcome: 'cancelled', reason: 'cancelled by the user' }, 'Compaction cancelled: cancelled by the user'],
    [{ outcome: 'stale', reason: '' }, 'Compaction discarded: the session moved on while it ran'],
    [{ outcome: 'failed', reason: 'summary model timed out' }, 'Compaction failed: summary model timed out'],
  ])('%o → %s', (r, want) => {
    expect(compactionMarkerText(r)).toBe(want);
    expect(compactionMarkerText(r)).not.toMatch(/→ 0\b/);
  });
  it('outcomeWords never shows token counts', () => expect(outcomeWords({ outcome: 'skipped', reason: 'x' })).toBe('Compaction skipped: x'));
});
