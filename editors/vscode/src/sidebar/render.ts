// renderSidebar turns a SidebarSnapshot into the HTML of the sidebar's
// content area: the budget as a compact header, the conversation, and the
// rest (compactions, pending intents, files) collapsed below it. It runs in
// the webview (webview/main.ts), which sanitises the result with DOMPurify
// before it reaches the DOM; Markdown goes through the `markdown` function
// it is given (markdown-it there, with raw HTML off). Nothing here touches
// the DOM, so it is unit-tested as is.
import { budgetDisplay, compactionMarkerText, elapsed, gaugeView, groupTokens, relativeTime } from '../format';
import type { SidebarSnapshot, StreamItem } from './model';

/** escapeHtml makes text safe inside HTML elements and attributes. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const e = escapeHtml;

/** Markdown renders Markdown to HTML. */
export type Markdown = (text: string) => string;

/** Controls says which toolbar buttons do something now. */
export interface Controls {
  ask: boolean;
  cancel: boolean;
  compact: boolean;
  capsule: boolean;
}

/** controls enables a button only when pressing it would do something. */
export function controls(s: SidebarSnapshot): Controls {
  const busy = s.turnRunning || s.barrier !== undefined || (s.budget !== undefined && s.budget.state !== 'idle');
  const compacting = s.barrier !== undefined || s.budget?.state === 'compacting';
  const capsule = s.compactions.some((c) => c.checkpointId !== '') || s.stream.some((i) => i.kind === 'compaction' && i.checkpointId !== '');
  return {
    ask: s.connected,
    cancel: s.connected && busy,
    compact: s.connected && s.budget !== undefined && !compacting,
    capsule: s.connected && capsule,
  };
}

export function renderSidebar(s: SidebarSnapshot, md: Markdown, now = Date.now()): string {
  return [renderHeader(s), renderStream(s.stream, md, now, s.older), renderMore(s)].join('\n');
}

/** APPROVAL_WORDS say how the user answered a call they were asked about. */
const APPROVAL_WORDS: Record<string, string> = { once: 'allowed once', session: 'allowed for the session', denied: 'denied by you' };

function renderHeader(s: SidebarSnapshot): string {
  if (!s.connected && !s.budget) return '<header class="budget" data-testid="budget"><span class="muted">Starting soba-lsp…</span></header>';
  if (!s.budget) return '<header class="budget" data-testid="budget"><span class="muted">Waiting for the budget…</span></header>';
  const g = gaugeView(s.budget);
  const barrier = s.barrier
    ? `<div class="barrier" data-testid="barrier"><span class="spinner" aria-hidden="true"></span>Compacting context${s.turnRunning ? ' before the response' : ''} · ${e(s.barrier.trigger.replace(/_/g, ' '))} · <span class="elapsed" data-elapsed="${Math.round(s.barrierElapsedMs ?? 0)}">${elapsed(s.barrierElapsedMs ?? 0)}</span></div>`
    : '';
  return `<header class="budget" data-testid="budget" title="${e(g.label)}">
<div class="budget-line"><span class="budget-text" data-testid="budget-text">${e(budgetDisplay(s.budget))}</span><span class="muted">auto-compact ${s.budget.autoCompact ? 'on' : 'off'}</span></div>
<div class="gauge level-${g.level}" role="meter" aria-label="context used" aria-valuemin="0" aria-valuemax="${s.budget.hardLimit}" aria-valuenow="${s.budget.effectiveTokens}">
<div class="fill" data-width="${(g.effective * 100).toFixed(1)}"></div>
<div class="soft" data-left="${(g.soft * 100).toFixed(1)}" title="soft threshold ${groupTokens(s.budget.softLimit)}"></div>
</div>${barrier}</header>`;
}

function renderStream(items: StreamItem[], md: Markdown, now: number, older?: 'more' | 'loading'): string {
  // A reopened session's older pages load when the conversation is scrolled to its top (webview/main.ts).
  const top = older
    ? `<div class="older muted" data-testid="older" data-older="${older}">${older === 'loading' ? 'Loading earlier messages…' : `Scroll up for earlier messages · ${button('older', '', 'Load earlier')}`}</div>`
    : '';
  if (items.length === 0 && !older) {
    return '<section class="messages" data-testid="messages"><p class="muted empty">Ask SOBA something below. Type /help for the commands.</p></section>';
  }
  let userIndex = -1;
  const body = items
    .map((i) => {
      if (i.kind === 'user') userIndex++;
      return renderItem(i, md, now, userIndex);
    })
    .join('\n');
  return `<section class="messages" data-testid="messages">${top}${body}</section>`;
}

/** clipLine is the first line of s, cut to max characters with "…" when longer. */
export function clipLine(s: string, max: number): string {
  const first = s.split('\n', 1)[0];
  const cut = first.length > max ? `${first.slice(0, max - 1)}…` : first;
  return cut !== s && !cut.endsWith('…') ? `${cut} …` : cut;
}

function button(action: string, key: string, label: string, title = ''): string {
  return `<button class="link" data-action="${e(action)}" data-key="${e(key)}"${title ? ` title="${e(title)}"` : ''}>${e(label)}</button>`;
}

function renderItem(i: StreamItem, md: Markdown, now: number, userIndex: number): string {
  switch (i.kind) {
    case 'user':
      return `<div class="msg user" data-key="${e(i.key)}" data-index="${userIndex}"><div class="text">${e(i.text)}</div><div class="meta"><span class="time" title="${e(new Date(i.at).toISOString())}">${e(relativeTime(i.at, now))}</span>${button('rewind', i.key, 'Rewind to here', 'Move the session back to just before this message')}</div></div>`;
    case 'assistant':
      return `<div class="msg assistant${i.discarded ? ' discarded' : ''}" data-key="${e(i.key)}"><div class="md">${md(i.text)}</div>${i.discarded ? `<p class="note">${e(i.discarded)}</p>` : ''}</div>`;
    case 'thinking':
      // Folded: a closed block the user opens; the webview keeps it open or closed across renders by its key.
      return `<details class="card thinking" data-key="${e(i.key)}" data-testid="thinking"><summary>Thinking</summary><div class="md">${md(i.text)}</div></details>`;
    case 'tool': {
      const state = i.status === 'running' ? 'running…' : i.status === 'ok' ? 'done' : 'failed';
      const actions = i.path
        ? `<div class="actions">${button('open', i.key, 'Open file')}${i.writes && i.status === 'ok' ? button('diff', i.key, 'Open diff', 'Compare with the file as it was before the session changed it') : ''}</div>`
        : '';
      // The server's summary says what the call did ("lines 11-30 of 250", "12 matches in 3 files",
      // "exit 1 · 38 lines · FAIL ./x"): it is shown on the closed card too, so a glance tells the outcome.
      const brief = i.status !== 'running' && i.summary ? ` <span class="tool-summary">· ${e(clipLine(i.summary, 100))}</span>` : '';
      const asked = i.approval ? ` <span class="tool-approval approval-${e(i.approval)}" data-testid="tool-approval">· ${e(APPROVAL_WORDS[i.approval] ?? i.approval)}</span>` : '';
      const result = i.status === 'running' ? '<p class="muted">Waiting for the result…</p>' : i.summary ? `<pre class="result">${e(i.summary)}</pre>` : '<p class="muted">(no output)</p>';
      return `<details class="card tool status-${i.status}" data-key="${e(i.key)}" data-testid="tool-card"><summary><span class="tool-name">${e(i.name)}</span> <span class="tool-title">${e(i.title)}</span>${brief}${asked} <span class="tool-state">${state}</span></summary><div class="card-body"><div class="label">Arguments</div><pre class="args">${e(i.args)}</pre><div class="label">Result</div>${result}${actions}</div></details>`;
    }
    case 'compaction': {
      const view = i.checkpointId ? ` · ${button('capsule', i.key, 'View capsule')}` : '';
      if (i.earlier) {
        const counts = i.tokensBefore !== undefined && i.tokensAfter !== undefined ? `${groupTokens(i.tokensBefore)} → ${groupTokens(i.tokensAfter)} tokens` : '';
        return `<div class="marker outcome-completed earlier" data-key="${e(i.key)}" data-testid="compaction-marker" title="${e(counts)}"><span class="marker-text">Earlier history compacted</span>${view}</div>`;
      }
      return `<div class="marker outcome-${e(i.outcome)}" data-key="${e(i.key)}" data-testid="compaction-marker" title="${e(i.line)}"><span class="marker-text">${e(compactionMarkerText(i))}</span>${view}</div>`;
    }
    case 'error': {
      const acts = [i.settings ? button('settings', i.key, 'Open settings') : '', i.retry !== undefined ? button('retry', i.key, 'Retry') : '', button('output', i.key, 'Show output')].join('');
      return `<div class="card error" data-key="${e(i.key)}" data-testid="error-card"><p>${e(i.text)}</p><div class="actions">${acts}</div></div>`;
    }
    case 'status':
      return `<div class="msg status" data-key="${e(i.key)}">${e(i.text)}</div>`;
  }
}

function renderMore(s: SidebarSnapshot): string {
  const rows = s.compactions
    .map(
      (c) =>
        `<tr class="outcome-${e(c.outcome)}" title="${e(c.line)}"><td>${e(c.trigger)}</td><td>${e(c.beforeAfter || c.outcome)}</td><td>${e(c.reclaimed)}</td><td><code>${e(c.checkpointId || '—')}</code></td></tr>`,
    )
    .join('');
  const compactions =
    s.compactions.length === 0
      ? '<p class="muted">None yet.</p>'
      : `<div class="scroll-x"><table class="compactions"><thead><tr><th>trigger</th><th>before → after</th><th>saved</th><th>checkpoint</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  const pending = s.budget?.pending ?? [];
  const files = (xs: string[], kind: string) =>
    xs.length === 0 ? '<p class="muted">—</p>' : `<ul class="files">${xs.map((x) => `<li><button class="link file" data-action="${kind}" data-path="${e(x)}">${e(x)}</button></li>`).join('')}</ul>`;
  return `<section class="more">
<details data-key="more-compactions"><summary>Compactions (${s.compactions.length})</summary>${compactions}</details>
<details data-key="more-pending"><summary>Pending intents (${pending.length})</summary>${pending.length === 0 ? '<p class="muted">None.</p>' : `<ul>${pending.map((x) => `<li>${e(x)}</li>`).join('')}</ul>`}</details>
<details data-key="more-files"><summary>Files (${s.filesRead.length} read, ${s.filesModified.length} modified)</summary><div class="label">Read</div>${files(s.filesRead, 'open-path')}<div class="label">Modified</div>${files(s.filesModified, 'diff-path')}</details>
</section>`;
}
