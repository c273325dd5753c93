import { describe, expect, it } from 'vitest';
import { budgetLevel, compactTokens, gaugeView, groupTokens, statusView, budgetSummary } from '../../src/format';
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

describe('budgetLevel: colour thresholds (R-O1)', () => {
  const cases: [string, number, ReturnType<typeof budgetLevel>][] = [
    ['empty', 0, 'normal'],
    ['below soft', 39045, 'normal'],
    ['exactly soft is not past it', 39046, 'normal'],
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

describe('compactTokens and groupTokens', () => {
  it.each([
    [0, '0'],
    [980, '980'],
    [1000, '1k'],
    [12400, '12.4k'],
    [45210, '45.2k'],
    [48808, '48.8k'],
    [99960, '100k'],
    [128000, '128k'],
    [1048576, '1.05M'],
    [2000000, '2M'],
  ])('compactTokens(%d) = %s', (n, want) => expect(compactTokens(n)).toBe(want));

  it('groups thousands', () => {
    expect(groupTokens(45210)).toBe('45,210');
    expect(groupTokens(1234567)).toBe('1,234,567');
    expect(groupTokens(12)).toBe('12');
  });
});

describe('statusView: status bar text and tooltip (R-O1, R-B3)', () => {
  it('shows effective tokens against the hard limit', () => {
    const v = statusView(budget());
    expect(v.text).toBe('$(dashboard) 12.4k / 48.8k');
    expect(v.level).toBe('normal');
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

  it('reads `compacting 82%` during a barrier (R-B3)', () => {
    const v = statusView(budget({ state: 'compacting' }), { operationId: 'op', trigger: 'auto_threshold', percentage: 82.4 });
    expect(v.text).toBe('$(sync~spin) compacting 82%');
    expect(v.tooltip).toContain('Compacting context before response · 82%');
  });

  it('clamps the barrier percentage to 0..100', () => {
    expect(statusView(budget(), { operationId: 'o', trigger: 'user', percentage: 140 }).text).toBe('$(sync~spin) compacting 100%');
    expect(statusView(budget(), { operationId: 'o', trigger: 'user', percentage: -3 }).text).toBe('$(sync~spin) compacting 0%');
  });

  it('keeps the colour of the budget during a barrier', () => {
    expect(statusView(budget({ effectiveTokens: 47000 }), { operationId: 'o', trigger: 'hard_limit', percentage: 10 }).level).toBe('error');
  });

  it('says when there is no budget yet or no server', () => {
    expect(statusView(undefined).text).toBe('$(dashboard) SOBA');
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
