// renderSidebar turns a SidebarSnapshot into the HTML of the sidebar's
// content area. The webview script puts it in place; the input box lives
// outside it so typing is never lost on a re-render.
import { gaugeView, groupTokens } from '../format';
import type { SidebarSnapshot, StreamItem } from './model';

/** escapeHtml makes text safe inside HTML elements and attributes. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const e = escapeHtml;

export function renderSidebar(s: SidebarSnapshot): string {
  return [renderGauge(s), renderCompactions(s), renderPending(s), renderFiles(s), renderStream(s.stream)].join('\n');
}

function renderGauge(s: SidebarSnapshot): string {
  if (!s.budget) return '<section class="budget"><h3>Budget</h3><p class="muted">Waiting for soba-lsp…</p></section>';
  const g = gaugeView(s.budget);
  const barrier = s.barrier
    ? `<p class="barrier" data-testid="barrier">Compacting context before response · ${Math.round(s.barrier.percentage)}% (${e(s.barrier.trigger)})</p>`
    : '';
  return `<section class="budget"><h3>Budget</h3>
<div class="gauge level-${g.level}" role="meter" aria-valuemin="0" aria-valuemax="${s.budget.hardLimit}" aria-valuenow="${s.budget.effectiveTokens}" title="${e(g.label)}">
<div class="fill" style="width:${(g.effective * 100).toFixed(1)}%"></div>
<div class="soft" style="left:${(g.soft * 100).toFixed(1)}%" title="soft threshold ${groupTokens(s.budget.softLimit)}"></div>
</div>
<p class="gauge-label" data-testid="gauge-label">${e(g.label)}</p>
<p class="muted">auto-compact ${s.budget.autoCompact ? 'on' : 'off'} · ${e(s.budget.state)}</p>${barrier}</section>`;
}

function renderCompactions(s: SidebarSnapshot): string {
  if (s.compactions.length === 0) return '<section><h3>Compactions</h3><p class="muted">None yet.</p></section>';
  const rows = s.compactions
    .map(
      (c) =>
        `<tr class="outcome-${e(c.outcome)}" title="${e(c.line)}"><td>${e(c.trigger)}</td><td>${e(c.beforeAfter || c.outcome)}</td><td>${e(c.reclaimed)}</td><td><code>${e(c.checkpointId || '—')}</code></td><td>${e(c.quality)}</td></tr>`,
    )
    .join('');
  return `<section><h3>Compactions</h3><table class="compactions"><thead><tr><th>trigger</th><th>before → after</th><th>saved</th><th>checkpoint</th><th>quality</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

function renderPending(s: SidebarSnapshot): string {
  const p = s.budget?.pending ?? [];
  const body = p.length === 0 ? '<p class="muted">No pending intents.</p>' : `<ul>${p.map((x) => `<li>${e(x)}</li>`).join('')}</ul>`;
  return `<section><h3>Pending intents</h3>${body}</section>`;
}

function renderFiles(s: SidebarSnapshot): string {
  const list = (xs: string[]) => (xs.length === 0 ? '<p class="muted">—</p>' : `<ul class="files">${xs.map((x) => `<li><code>${e(x)}</code></li>`).join('')}</ul>`);
  return `<section><h3>Files read</h3>${list(s.filesRead)}<h3>Files modified</h3>${list(s.filesModified)}</section>`;
}

function renderStream(items: StreamItem[]): string {
  if (items.length === 0) return '<section class="stream"><h3>Conversation</h3><p class="muted">Ask SOBA something below.</p></section>';
  const body = items.map((i) => `<div class="msg ${i.kind}">${e(i.text)}</div>`).join('');
  return `<section class="stream"><h3>Conversation</h3><div class="messages">${body}</div></section>`;
}
