import { describe, expect, it } from 'vitest';
import { capsuleSection, MAX_COMPACTIONS, SidebarModel } from '../../src/sidebar/model';
import { escapeHtml, renderSidebar } from '../../src/sidebar/render';
import type { Budget } from '../../src/protocol';

const budget: Budget = {
  effectiveTokens: 40000, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'provider_usage', autoCompact: true, pending: ['milestone'], state: 'idle', lastCompaction: null, cachedTokens: 0,
  display: '40.0k / 48.8k (81%)',
};

describe('SidebarModel reduces the notifications', () => {
  it('tracks a barrier from start through progress to end (R-B3)', () => {
    const m = new SidebarModel();
    m.applyCompaction({ phase: 'start', operationId: 'op1', trigger: 'auto_threshold' });
    m.applyCompaction({ phase: 'progress', operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    expect(m.snapshot().barrier).toEqual({ operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    m.applyCompaction({ phase: 'end', operationId: 'op1', trigger: 'auto_threshold', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870, reclaimedRatio: 0.671, checkpointId: 'ck_1', quality: 'degraded' });
    const s = m.snapshot();
    expect(s.barrier).toBeUndefined();
    expect(s.compactions[0]).toMatchObject({ trigger: 'auto_threshold', beforeAfter: '45,210 → 14,870', reclaimed: '67%', checkpointId: 'ck_1', quality: 'degraded' });
  });

  it('keeps one row per operation and at most MAX_COMPACTIONS', () => {
    const m = new SidebarModel();
    for (let i = 0; i < MAX_COMPACTIONS + 3; i++) m.applyResult({ operationId: `op${i}`, trigger: 'user', outcome: 'completed' });
    m.applyBudget({ ...budget, lastCompaction: { operationId: `op${MAX_COMPACTIONS + 2}`, trigger: 'user', outcome: 'completed' } as never });
    const rows = m.snapshot().compactions;
    expect(rows).toHaveLength(MAX_COMPACTIONS);
    expect(rows[0].operationId).toBe(`op${MAX_COMPACTIONS + 2}`);
  });

  it('streams text deltas into one assistant block and attaches tool results', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'read the notes');
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'Let me ' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'look.' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'read_file', arguments: { path: 'notes.md' } });
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c1', ok: true, summary: '3 lines' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c2', name: 'edit_file', arguments: '{"path":"main.go","old_text":"a","new_text":"b"}' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'failed', error: 'model server http://127.0.0.1:11434 unreachable' });
    const s = m.snapshot();
    expect(s.stream.map((i) => [i.kind, i.text])).toEqual([
      ['user', 'read the notes'],
      ['assistant', 'Let me look.'],
      ['tool', 'read_file notes.md → ✓ 3 lines'],
      ['tool', 'edit_file main.go'],
      ['error', 'turn failed: model server http://127.0.0.1:11434 unreachable'],
    ]);
    expect(s.filesRead).toEqual(['notes.md']);
    // The edit never got a result: proposed is not modified (R-C6).
    expect(s.filesModified).toEqual([]);
  });

  it('lists only the files of calls that happened (R-C6)', () => {
    const m = new SidebarModel();
    const call = (id: string, name: string, path: string) =>
      m.applyEvent({ turnId: 't1', type: 'tool_call', id, name, arguments: { path } });
    call('c1', 'write_file', 'denied.txt');
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c1', ok: false, summary: 'denied: the user did not allow this write_file call' });
    call('c2', 'edit_file', 'kept.txt');
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c2', ok: false, summary: 'edit_file: old_text not found in kept.txt' });
    call('c3', 'write_file', './done.txt');
    expect(m.snapshot().filesModified).toEqual([]); // asked, not yet answered
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c3', ok: true, summary: 'wrote 3 bytes to done.txt', filesModified: ['done.txt'] });
    call('c4', 'read_file', 'kept.txt');
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c4', ok: true, summary: 'original', filesRead: ['kept.txt'] });
    // A server that does not name the files: the successful call's path.
    call('c5', 'edit_file', 'old-server.txt');
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c5', ok: true, summary: 'edited old-server.txt' });
    const s = m.snapshot();
    expect(s.filesModified).toEqual(['done.txt', 'old-server.txt']);
    expect(s.filesRead).toEqual(['kept.txt']);
  });

  it('puts the prompt before its turn even when the turn streamed first', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t0', 'first');
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'answer' });
    m.applyUserPrompt('t1', 'second');
    expect(m.snapshot().stream.map((i) => i.text)).toEqual(['first', 'second', 'answer']);
  });

  it('reads the file artifact sections of a capsule', () => {
    const md = '## Goal\nx\n## Files read\n- `a.go`\n- b.go\n## Files modified\n- (none)\n## Verification\n- go test\n';
    expect(capsuleSection(md, 'Files read')).toEqual(['a.go', 'b.go']);
    expect(capsuleSection(md, 'Files modified')).toEqual([]);
    expect(capsuleSection(md, 'Blockers')).toEqual([]);
  });
});

describe('renderSidebar', () => {
  it('shows the gauge, the compactions, pending intents, files and the stream', () => {
    const m = new SidebarModel();
    m.applyBudget(budget);
    m.applyResult({ operationId: 'op1', trigger: 'milestone', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870, reclaimedRatio: 0.67, checkpointId: 'ck_9', quality: 'full' });
    m.applyUserPrompt('t1', 'hello <b>');
    const html = renderSidebar(m.snapshot());
    expect(html).toContain('class="gauge level-warning"');
    expect(html).toContain('40,000 / 48,808 (soft 39,046, provider usage)');
    expect(html).toContain('<td>milestone</td><td>45,210 → 14,870</td><td>67%</td><td><code>ck_9</code></td><td>full</td>');
    expect(html).toContain('<li>milestone</li>');
    expect(html).toContain('hello &lt;b&gt;');
    expect(html).not.toContain('<b>');
  });

  it('places the soft marker and the fill as shares of the hard limit', () => {
    const m = new SidebarModel();
    m.applyBudget({ ...budget, effectiveTokens: 24404 });
    const html = renderSidebar(m.snapshot());
    expect(html).toContain('style="width:50.0%"');
    expect(html).toContain('style="left:80.0%"');
  });

  it('escapes HTML', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});
