import { describe, expect, it } from 'vitest';
import { capsuleSection, MAX_COMPACTIONS, MAX_STREAM, SidebarModel, toolTitle, type StreamItem } from '../../src/sidebar/model';
import { controls, escapeHtml, renderSidebar } from '../../src/sidebar/render';
import { markdownRenderer } from '../../src/webview/markdown';
import type { Budget } from '../../src/protocol';

const budget: Budget = {
  effectiveTokens: 40000, hardLimit: 48808, softLimit: 39046, contextWindow: 65000, maxOutputTokens: 8000,
  safetyReserveTokens: 8192, source: 'provider_usage', autoCompact: true, pending: ['milestone'], state: 'idle', lastCompaction: null, cachedTokens: 0,
  display: '40.0k / 48.8k (81%)',
};

const md = markdownRenderer();

/** brief is what a test compares: the kind and the words of each item. */
function brief(i: StreamItem): [string, string] {
  switch (i.kind) {
    case 'tool':
      return ['tool', `${i.title} · ${i.status}${i.summary ? ` · ${i.summary}` : ''}`];
    case 'compaction':
      return ['compaction', `${i.outcome} ${i.checkpointId}`];
    default:
      return [i.kind, i.text];
  }
}

describe('SidebarModel reduces the notifications', () => {
  it('tracks a barrier from start through progress to end, and marks the conversation where it ended (R-B3)', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'read the notes');
    m.applyCompaction({ phase: 'start', operationId: 'op1', trigger: 'auto_threshold' });
    m.applyCompaction({ phase: 'progress', operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    expect(m.snapshot().barrier).toEqual({ operationId: 'op1', trigger: 'auto_threshold', percentage: 82 });
    const end = { phase: 'end' as const, operationId: 'op1', trigger: 'auto_threshold', outcome: 'completed', tokensBefore: 45210, tokensAfter: 14870, reclaimedRatio: 0.671, checkpointId: 'ck_1', quality: 'degraded' };
    m.applyCompaction(end);
    m.applyResult(end); // the soba.compact answer of the same operation
    const s = m.snapshot();
    expect(s.barrier).toBeUndefined();
    expect(s.compactions[0]).toMatchObject({ trigger: 'auto_threshold', beforeAfter: '45,210 → 14,870', reclaimed: '67%', checkpointId: 'ck_1', quality: 'degraded' });
    expect(s.stream.map(brief)).toEqual([
      ['user', 'read the notes'],
      ['compaction', 'completed ck_1'],
    ]);
  });

  it.each([
    ['a skipped soft compaction leaves no marker', 'turn_complete', 'skipped', 0],
    ['a skipped compaction the user asked for is marked, in words', 'user', 'skipped', 1],
    ['a failed one is always marked', 'hard_limit', 'failed', 1],
    ['a cancelled soft one is not', 'auto_threshold', 'cancelled', 0],
  ])('%s (R-B4)', (_name, trigger, outcome, n) => {
    const m = new SidebarModel();
    m.applyResult({ operationId: 'op', trigger, outcome, reason: 'nothing old enough to compact', tokensBefore: 844, tokensAfter: 0 });
    expect(m.snapshot().stream.filter((i) => i.kind === 'compaction')).toHaveLength(n);
  });

  it('keeps the thinking apart from the answer, folded, and moves back an answer that was thinking (R-C9)', () => {
    const m = new SidebarModel();
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'thinking', delta: 'The user wants ' });
    m.applyEvent({ turnId: 't1', type: 'thinking', delta: 'a file.' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'Reading it.' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'read_file', arguments: { path: 'a.go' } });
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c1', ok: true, summary: '12 lines' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'Hmm, short file.\n' });
    m.applyEvent({ turnId: 't1', type: 'thinking', delta: 'Hmm, short file.\n', moved: true });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'It is a.go.' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'completed' });
    const s = m.snapshot();
    expect(s.stream.map((i) => [i.kind, 'text' in i ? i.text : ''])).toEqual([
      ['thinking', 'The user wants a file.'],
      ['assistant', 'Reading it.'],
      ['tool', ''],
      ['thinking', 'Hmm, short file.\n'],
      ['assistant', 'It is a.go.'],
    ]);
    const html = renderSidebar(s, markdownRenderer());
    const blocks = html.match(/<details class="card thinking"[^>]*>/g) ?? [];
    expect(blocks).toHaveLength(2);
    for (const b of blocks) expect(b).not.toMatch(/\bopen\b/);
    expect(html).toContain('<summary>Thinking</summary>');
    const answers = html.match(/<div class="msg assistant[^"]*"[^>]*><div class="md">([\s\S]*?)<\/div>/g) ?? [];
    expect(answers.join('')).not.toContain('The user wants');
    expect(answers.join('')).not.toContain('Hmm');
  });

  it('keeps one row per operation and at most MAX_COMPACTIONS', () => {
    const m = new SidebarModel();
    for (let i = 0; i < MAX_COMPACTIONS + 3; i++) m.applyResult({ operationId: `op${i}`, trigger: 'user', outcome: 'completed' });
    m.applyBudget({ ...budget, lastCompaction: { operationId: `op${MAX_COMPACTIONS + 2}`, trigger: 'user', outcome: 'completed' } as never });
    const rows = m.snapshot().compactions;
    expect(rows).toHaveLength(MAX_COMPACTIONS);
    expect(rows[0].operationId).toBe(`op${MAX_COMPACTIONS + 2}`);
  });

  it('streams text into one block, makes tool calls cards with their result, and counts a write as modified only once it succeeded (R-C6)', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'read the notes');
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'Let me ' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'look.' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'read_file', arguments: { path: 'notes.md' } });
    expect(m.snapshot().turnRunning).toBe(true);
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c1', ok: true, summary: '# Notes' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c2', name: 'edit_file', arguments: '{"path":"main.go","old_text":"a","new_text":"b"}' });
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c2', ok: false, summary: 'old_text not found' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c3', name: 'write_file', arguments: { path: 'b.go', content: 'package b\n\nfunc B() {}\n' } });
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c3', ok: true, summary: 'wrote 25 bytes' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'Done.' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'completed' });
    const s = m.snapshot();
    expect(s.stream.map(brief)).toEqual([
      ['user', 'read the notes'],
      ['assistant', 'Let me look.'],
      ['tool', 'Read notes.md · ok · # Notes'],
      ['tool', 'Edit main.go · failed · old_text not found'],
      ['tool', 'Write b.go (3 lines) · ok · wrote 25 bytes'],
      ['assistant', 'Done.'],
    ]);
    expect(s.turnRunning).toBe(false);
    expect(s.filesRead).toEqual(['notes.md']);
    expect(s.filesModified).toEqual(['b.go']);
    const edit = s.stream[3] as Extract<StreamItem, { kind: 'tool' }>;
    expect(JSON.parse(edit.args)).toEqual({ path: 'main.go', old_text: 'a', new_text: 'b' });
    expect(edit).toMatchObject({ path: 'main.go', writes: true });
  });

  it('a reopened session lists its earlier requests and the files its path modified (R-C6)', () => {
    const m = new SidebarModel();
    m.applyEarlier([
      { text: 'write a.txt', createdAt: '2026-12-03T08:00:00Z', filesModifiedAfter: ['a.txt', 'b.txt'] },
      { text: 'write b.txt', createdAt: '2026-12-03T08:01:00Z', filesModifiedAfter: ['b.txt'] },
    ]);
    const s = m.snapshot();
    expect(s.filesModified).toEqual(['a.txt', 'b.txt']);
    expect(s.stream.filter((i) => i.kind === 'user').map((i) => (i as { text: string }).text)).toEqual(['write a.txt', 'write b.txt']);
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

  it('removes the streamed text of a failed attempt and offers Retry and Open settings (issue 19)', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'fix the parser');
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'kept, before a tool' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'bash', arguments: { command: 'go test ./...' } });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'half an ans' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'failed', error: 'POST http://127.0.0.1:11434/api/chat: connection refused' });
    const s = m.snapshot();
    expect(s.stream.map(brief)).toEqual([
      ['user', 'fix the parser'],
      ['assistant', 'kept, before a tool'],
      ['tool', 'Run go test ./... · failed'],
      ['error', 'The turn failed: POST http://127.0.0.1:11434/api/chat: connection refused'],
    ]);
    expect(s.stream[3]).toMatchObject({ kind: 'error', retry: 'fix the parser', settings: true });
  });

  it('removes the text streamed before a context overflow: the retry answers again (R-G9)', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'go');
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'first attempt' });
    m.applyCompaction({ phase: 'start', operationId: 'op', trigger: 'context_overflow' });
    m.applyCompaction({ phase: 'end', operationId: 'op', trigger: 'context_overflow', outcome: 'completed', tokensBefore: 9000, tokensAfter: 900, checkpointId: 'ck_o' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'second attempt' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'completed' });
    expect(m.snapshot().stream.map(brief)).toEqual([
      ['user', 'go'],
      ['compaction', 'completed ck_o'],
      ['assistant', 'second attempt'],
    ]);
  });

  it('keeps a cancelled answer dimmed, saying it is not in the session', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t1', 'go');
    m.applyEvent({ turnId: 't1', type: 'turn_start' });
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'partial' });
    m.applyEvent({ turnId: 't1', type: 'turn_end', outcome: 'cancelled' });
    const s = m.snapshot();
    expect(s.stream[1]).toMatchObject({ kind: 'assistant', text: 'partial', discarded: 'cancelled: not kept in the session' });
    expect(brief(s.stream[2])).toEqual(['status', 'Turn cancelled']);
  });

  it('puts the prompt before its turn even when the turn streamed first', () => {
    const m = new SidebarModel();
    m.applyUserPrompt('t0', 'first');
    m.applyEvent({ turnId: 't1', type: 'text', delta: 'answer' });
    m.applyUserPrompt('t1', 'second');
    expect(m.snapshot().stream.map((i) => brief(i)[1])).toEqual(['first', 'second', 'answer']);
  });

  it('keeps the history up to a rewind point on screen', () => {
    const m = new SidebarModel();
    for (const t of ['t1', 't2', 't3']) {
      m.applyUserPrompt(t, `ask ${t}`);
      m.applyEvent({ turnId: t, type: 'text', delta: `answer ${t}` });
    }
    const keep = new SidebarModel();
    Object.assign(keep, { stream: [...m.stream] });
    m.rewoundTo(1, false); // before the second message: only the first turn stays
    expect(m.snapshot().stream.map((i) => brief(i)[1])).toEqual(['ask t1', 'answer t1']);
    keep.rewoundTo(1, true); // after the second turn
    expect(keep.snapshot().stream.map((i) => brief(i)[1])).toEqual(['ask t1', 'answer t1', 'ask t2', 'answer t2']);
  });

  it('keeps the newest MAX_STREAM items of a long session, oldest out first', () => {
    const m = new SidebarModel();
    for (let i = 0; i < MAX_STREAM + 40; i++) {
      m.applyUserPrompt(`t${i}`, `ask ${i}`);
      m.applyEvent({ turnId: `t${i}`, type: 'turn_start' });
      m.applyEvent({ turnId: `t${i}`, type: 'text', delta: `a${i}` });
      m.applyEvent({ turnId: `t${i}`, type: 'tool_call', id: `c${i}`, name: 'list_files', arguments: {} });
      m.applyEvent({ turnId: `t${i}`, type: 'turn_end', outcome: 'completed' });
    }
    const s = m.snapshot();
    expect(s.stream).toHaveLength(MAX_STREAM);
    expect(brief(s.stream[s.stream.length - 1])).toEqual(['tool', `List the workspace · failed`]);
    expect(s.turnRunning).toBe(false);
  });

  it('reads the file artifact sections of a capsule', () => {
    const cap = '## Goal\nx\n## Files read\n- `a.go`\n- b.go\n## Files modified\n- (none)\n## Verification\n- go test\n';
    expect(capsuleSection(cap, 'Files read')).toEqual(['a.go', 'b.go']);
    expect(capsuleSection(cap, 'Files modified')).toEqual([]);
    expect(capsuleSection(cap, 'Blockers')).toEqual([]);
  });

  it.each([
    ['bash', { command: 'go test   ./...\n' }, 'Run go test ./...'],
    ['grep', { pattern: 'func Parse', path: 'parser' }, 'Search for func Parse in parser'],
    ['list_files', undefined, 'List the workspace'],
    ['checkpoint', { kind: 'plan_pivot', note: 'switch to a table parser' }, 'Mark plan pivot: switch to a table parser'],
    ['mcp__docs__search', { query: 'markdown-it' }, 'mcp__docs__search markdown-it'],
  ])('toolTitle(%s) says what the call does', (name, args, want) => expect(toolTitle(name, args as never)).toBe(want));
});

describe('renderSidebar: the conversation first, Markdown rendered', () => {
  function snap() {
    const m = new SidebarModel();
    m.connected = true;
    m.now = () => Date.parse('2026-12-03T10:00:00Z');
    m.applyBudget({ ...budget, effectiveTokens: 14000, hardLimit: 17000, softLimit: 13600, display: '14.0k / 17.0k (82%)' });
    m.applyResult({ operationId: 'op1', trigger: 'milestone', outcome: 'completed', tokensBefore: 13460, tokensAfter: 820, reclaimedRatio: 0.94, checkpointId: 'ck_9', quality: 'full' });
    m.applyUserPrompt('t1', 'hello <b>');
    m.applyEvent({ turnId: 't1', type: 'text', delta: '## Plan\n\n- one\n- two\n\n```go\nfmt.Println("<hi>")\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script> [x](javascript:alert(1)) [ok](https://example.com)' });
    m.applyEvent({ turnId: 't1', type: 'tool_call', id: 'c1', name: 'write_file', arguments: { path: 'a.go', content: 'package a\n' } });
    m.applyEvent({ turnId: 't1', type: 'tool_result', id: 'c1', ok: true, summary: 'wrote a.go' });
    return m.snapshot();
  }

  it('renders headings, lists, code blocks with Copy, and tables; raw HTML and javascript: links stay text', () => {
    const html = renderSidebar(snap(), md, Date.parse('2026-12-03T10:00:12Z'));
    expect(html).toContain('<h2>Plan</h2>');
    expect(html).toContain('<ul>\n<li>one</li>\n<li>two</li>\n</ul>');
    expect(html).toContain('<button class="copy" type="button" title="Copy to the clipboard">Copy</button><pre><code class="language-go">fmt.Println(&quot;&lt;hi&gt;&quot;)');
    expect(html).toContain('<table>');
    expect(html).toContain('<td>1</td>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('href="javascript:');
    expect(html).toContain('<a href="https://example.com">ok</a>');
    expect(html).toContain('hello &lt;b&gt;');
    expect(html).toContain('12 s ago');
    expect(html).toContain('data-action="rewind"');
  });

  it('puts the budget in a compact header and the conversation before the collapsed sections', () => {
    const html = renderSidebar(snap(), md);
    expect(html).toContain('<span class="budget-text" data-testid="budget-text">14.0k / 17.0k (82%)</span>');
    expect(html).toContain('class="gauge level-warning"');
    const order = ['data-testid="budget"', 'data-testid="messages"', 'data-key="more-compactions"', 'data-key="more-pending"', 'data-key="more-files"'].map((x) => html.indexOf(x));
    expect(order.every((x) => x >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(html).not.toMatch(/<details [^>]*open/);
    expect(html).toContain('Files (0 read, 1 modified)');
    // No inline styles: the strict CSP forbids them; the webview sets widths through the CSSOM.
    expect(html).not.toContain('style=');
    expect(html).toContain('data-width="82.4"');
  });

  it('shows a tool call as a card with its arguments, result and Open file / Open diff', () => {
    const html = renderSidebar(snap(), md);
    const card = /<details class="card tool status-ok"[\s\S]*?<\/details>/.exec(html)![0];
    expect(card).toContain('<span class="tool-title">Write a.go (1 line)</span>');
    expect(card).toContain('&quot;content&quot;: &quot;package a\\n&quot;');
    expect(card).toContain('<pre class="result">wrote a.go</pre>');
    expect(card).toContain('>Open file</button>');
    expect(card).toContain('>Open diff</button>');
    expect(card).toContain('<div class="label">Result</div>');
  });

  // The server's summary says what each call did (agent/tools.go readSummary, grepSummary, bashSummary): the
  // card shows it as the result and, closed, after the title; a running call has none yet.
  it.each([
    ['read_file', { path: 'notes.md' }, true, 'lines 11-30 of 250', 'Read notes.md', '· lines 11-30 of 250'],
    ['grep', { pattern: 'TODO' }, true, '12 matches in 3 files', 'Search for TODO', '· 12 matches in 3 files'],
    ['bash', { command: 'go test ./x' }, false, 'exit 1 · 38 lines · FAIL ./x', 'Run go test ./x', '· exit 1 · 38 lines · FAIL ./x'],
    ['bash', { command: 'cat big' }, false, 'read_file: first\nsecond', 'Run cat big', '· read_file: first …'],
  ])('shows what %s did as its result: %s', (name, args, ok, summary, title, brief) => {
    const m = new SidebarModel();
    m.applyEvent({ turnId: 't', type: 'tool_call', id: 'r', name, arguments: args });
    expect(renderSidebar(m.snapshot(), md)).not.toContain('tool-summary');
    m.applyEvent({ turnId: 't', type: 'tool_result', id: 'r', ok, summary });
    const card = /<details class="card tool[\s\S]*?<\/details>/.exec(renderSidebar(m.snapshot(), md))![0];
    const head = /<summary>([\s\S]*?)<\/summary>/.exec(card)![1].replace(/<[^>]+>/g, '');
    expect(head).toBe(`${name} ${title} ${brief} ${ok ? 'done' : 'failed'}`);
    expect(card).toContain(`<div class="label">Result</div><pre class="result">${summary.replace(/\n/g, '\n')}</pre>`);
    expect(card).not.toContain('first line');
  });

  it('marks the compaction in the conversation: "Context compacted · 13,460 → 820 tokens · View capsule"', () => {
    const html = renderSidebar(snap(), md);
    const marker = /<div class="marker outcome-completed"[\s\S]*?<\/div>/.exec(html)![0];
    expect(marker.replace(/<[^>]+>/g, '')).toBe('Context compacted · 13,460 → 820 tokens · View capsule');
  });

  it('escapes HTML', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('the barrier in the header', () => {
  it('says what waits and for how long (R-B3)', () => {
    const m = new SidebarModel();
    let now = 1000;
    m.now = () => now;
    m.connected = true;
    m.applyBudget({ ...budget, state: 'compacting' });
    m.applyCompaction({ phase: 'start', operationId: 'o', trigger: 'auto_threshold' });
    now += 12_300;
    let html = renderSidebar(m.snapshot(), md);
    expect(html).toContain('Compacting context · auto threshold · <span class="elapsed" data-elapsed="12300">12 s</span>');
    m.applyEvent({ turnId: 't', type: 'turn_start' });
    html = renderSidebar(m.snapshot(), md);
    expect(html).toContain('Compacting context before the response · auto threshold');
    m.applyCompaction({ phase: 'end', operationId: 'o', trigger: 'auto_threshold', outcome: 'completed' });
    expect(m.snapshot().barrierElapsedMs).toBeUndefined();
    expect(renderSidebar(m.snapshot(), md)).not.toContain('data-testid="barrier"');
  });
});

describe('controls: buttons are enabled only when they do something', () => {
  const base = () => {
    const m = new SidebarModel();
    m.connected = true;
    m.applyBudget(budget);
    return m;
  };
  it.each([
    ['idle, nothing compacted', (_m: SidebarModel) => {}, { ask: true, cancel: false, compact: true, capsule: false }],
    ['a turn runs', (m: SidebarModel) => m.applyEvent({ turnId: 't', type: 'turn_start' }), { ask: true, cancel: true, compact: true, capsule: false }],
    ['a compaction runs', (m: SidebarModel) => m.applyCompaction({ phase: 'start', operationId: 'o', trigger: 'user' }), { ask: true, cancel: true, compact: false, capsule: false }],
    ['a capsule exists', (m: SidebarModel) => m.applyResult({ operationId: 'o', trigger: 'user', outcome: 'completed', checkpointId: 'ck' }), { ask: true, cancel: false, compact: true, capsule: true }],
    ['the server is down', (m: SidebarModel) => (m.connected = false), { ask: false, cancel: false, compact: false, capsule: false }],
  ])('%s', (_name, change, want) => {
    const m = base();
    change(m);
    expect(controls(m.snapshot())).toEqual(want);
  });
});
