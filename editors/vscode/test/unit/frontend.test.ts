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

  it('a barrier: status bar "SOBA compacting", then the budget, one result line and one notification in full with Show capsule (R-B3)', async () => {
    const { send, output } = setup();
    const item = fake.statusItems[0];
    const opened: unknown[] = [];
    fake.commands.set('soba-vscode.showLatestCapsule', (id: unknown) => opened.push(id));
    fake.answers.message.push('Show capsule');
    send('soba/budget', budget);
    expect(item.text).toBe('SOBA 45.2k / 48.8k (92%)');
    send('soba/compaction', { phase: 'start', operationId: 'op1', trigger: 'auto_threshold' });
    expect(item.text).toBe('$(sync~spin) SOBA compacting');
    send('soba/compaction', { phase: 'progress', operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    expect(item.text).toBe('$(sync~spin) SOBA compacting');
    const end = {
      phase: 'end', operationId: 'op1', trigger: 'auto_threshold', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870,
      reclaimedTokens: 30340, reclaimedRatio: 0.671, checkpointId: 'ck_8f2a1c', quality: 'full', durationMs: 1200, reason: '',
      line: 'Compacted context · auto_threshold · 45,210 → 14,870 tokens (67% reclaimed) · ck_8f2a1c',
    };
    send('soba/compaction', end);
    send('soba/compaction', end); // a repeat of the same operation writes nothing more
    send('soba/budget', { ...budget, effectiveTokens: 14870, state: 'idle', display: '14.9k / 48.8k (30%)' });
    expect(item.text).toBe('SOBA 14.9k / 48.8k (30%)');
    expect((output as any).lines).toEqual([end.line]);
    expect(fake.messages).toEqual([{ level: 'info', message: end.line, modal: false, detail: undefined, items: ['Show capsule'] }]);
    await new Promise((r) => setTimeout(r, 0));
    expect(opened).toEqual(['ck_8f2a1c']);
  });

  it.each([
    ['a skipped compaction the user asked for says why in words, never "→ 0" (R-B4)', { trigger: 'user', outcome: 'skipped', reason: 'nothing old enough to compact', tokensBefore: 844, tokensAfter: 0 }, [{ level: 'info', message: 'Compaction skipped: nothing old enough to compact' }]],
    ['a skipped soft compaction shows nothing (R-B4)', { trigger: 'turn_complete', outcome: 'skipped', reason: 'below the threshold' }, []],
    ['a failed one is a warning (R-B4)', { trigger: 'hard_limit', outcome: 'failed', reason: 'summary model timed out' }, [{ level: 'warning', message: 'Compaction failed: summary model timed out' }]],
  ])('%s', (_name, r, want) => {
    const { send } = setup();
    send('soba/compaction', { phase: 'end', operationId: 'opx', line: `Compaction ${r.outcome} · ${r.trigger} · ${r.reason}`, ...r });
    expect(fake.messages).toMatchObject(want);
    expect(fake.messages.map((m) => m.message).join()).not.toMatch(/→ 0/);
  });

  it('a degraded fallback is marked in the output (R-F1)', () => {
    const { send, output, model } = setup();
    send('soba/compaction', { phase: 'end', operationId: 'op2', trigger: 'user', outcome: 'completed', quality: 'degraded', line: 'Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1' });
    expect((output as any).lines).toEqual(['Compacted context · user · 10 → 5 tokens (50% reclaimed) · ck_1 (degraded fallback)']);
    expect(model.snapshot().compactions[0].quality).toBe('degraded');
  });

  it('a failed turn is a line naming the cause in the output, not a second notification; a completed one is a line', () => {
    const { send, output } = setup();
    send('soba/event', { turnId: 't1', type: 'turn_end', outcome: 'completed' });
    send('soba/event', { turnId: 't2', type: 'turn_end', outcome: 'failed', error: 'POST http://127.0.0.1:11434/api/chat: connection refused' });
    expect((output as any).lines).toEqual(['SOBA: turn t1 completed', 'SOBA: turn t2 failed: POST http://127.0.0.1:11434/api/chat: connection refused']);
    // The server's window/showMessage is the one notification; the chat has the card.
    expect(fake.messages).toEqual([]);
  });
});
