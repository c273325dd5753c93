import { beforeEach, describe, expect, it } from 'vitest';
import { fake, window } from '../fake/vscode';
import { Frontend } from '../../src/frontend';
import { SidebarModel } from '../../src/sidebar/model';
import { BudgetStatusBar } from '../../src/statusBar';
import type { Budget } from '../../src/protocol';

beforeEach(() => fake.reset());

/** host collects the notification handlers Frontend registers, to deliver notifications by method. */
function setup() {
  const handlers = new Map<string, (p: any) => void>();
  const output = window.createOutputChannel('SOBA');
  const model = new SidebarModel();
  const status = new BudgetStatusBar();
  status.setConnected(true);
  let changes = 0;
  const f = new Frontend(output, model, status, () => changes++, () => undefined);
  f.attach({ onNotification: (m, h) => (handlers.set(m, h), { dispose() {} }) });
  const send = (m: string, p: unknown) => handlers.get(m)!(p);
  return { f, send, model, output, handlers, changes: () => changes };
}

const budget: Budget = {
  effectiveTokens: 45210, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'provider_usage', autoCompact: true, pending: ['turn_complete'], state: 'generating', lastCompaction: null, cachedTokens: 0,
  display: '45.2k / 48.8k (92%)',
};

describe('Frontend: soba/* notifications to the status bar, the sidebar and the output', () => {
  it('registers soba/budget, soba/compaction and soba/event, and answers progress creation and showMessageRequest itself', () => {
    const { f, handlers } = setup();
    expect([...handlers.keys()].sort()).toEqual(['soba/budget', 'soba/compaction', 'soba/event']);
    expect(Object.keys(f.requestHandlers()).sort()).toEqual(['window/showMessageRequest', 'window/workDoneProgress/create']);
  });

  it('a barrier: status bar `compacting N%`, then the budget and one result line (R-B3)', () => {
    const { send, output } = setup();
    const item = fake.statusItems[0];
    send('soba/budget', budget);
    expect(item.text).toBe('$(dashboard) 45.2k / 48.8k');
    send('soba/compaction', { phase: 'start', operationId: 'op1', trigger: 'auto_threshold' });
    expect(item.text).toBe('$(sync~spin) compacting 0%');
    send('soba/compaction', { phase: 'progress', operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    expect(item.text).toBe('$(sync~spin) compacting 82%');
    const end = {
      phase: 'end', operationId: 'op1', trigger: 'auto_threshold', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870,
      reclaimedTokens: 30340, reclaimedRatio: 0.671, checkpointId: 'ck_8f2a1c', quality: 'full', durationMs: 1200, reason: '',
      line: 'Compacted context · auto_threshold · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c',
    };
    send('soba/compaction', end);
    send('soba/compaction', end); // a repeat of the same operation writes nothing more
    send('soba/budget', { ...budget, effectiveTokens: 14870, state: 'idle' });
    expect(item.text).toBe('$(dashboard) 14.9k / 48.8k');
    expect((output as any).lines).toEqual([end.line]);
  });

  it('a degraded fallback is marked in the output (R-F1)', () => {
    const { send, output, model } = setup();
    send('soba/compaction', { phase: 'end', operationId: 'op2', trigger: 'user', outcome: 'completed', quality: 'degraded', line: 'Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1' });
    expect((output as any).lines).toEqual(['Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1 (degraded fallback)']);
    expect(model.snapshot().compactions[0].quality).toBe('degraded');
  });

  it('a failed turn is an error naming the cause; a completed one is a line', () => {
    const { send, output } = setup();
    send('soba/event', { turnId: 't1', type: 'turn_end', outcome: 'completed' });
    send('soba/event', { turnId: 't2', type: 'turn_end', outcome: 'failed', error: 'POST http://127.0.0.1:11434/api/chat: connection refused' });
    expect((output as any).lines).toEqual(['SOBA: turn t1 completed', 'SOBA: turn t2 failed: POST http://127.0.0.1:11434/api/chat: connection refused']);
    expect(fake.messages).toMatchObject([{ level: 'error', message: 'SOBA: turn t2 failed: POST http://127.0.0.1:11434/api/chat: connection refused' }]);
  });
});
