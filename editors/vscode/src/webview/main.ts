// The SOBA sidebar's webview script (bundled into dist/webview.js): renders
// the state the extension posts (render.ts), Markdown with markdown-it (raw
// HTML off), sanitises the result with DOMPurify before it reaches the DOM,
// and sends the prompt, button clicks and card actions back. A re-render
// keeps which cards are open and where the conversation is scrolled.
import DOMPurify from 'dompurify';
import { controls, renderSidebar } from '../sidebar/render';
import type { SidebarSnapshot } from '../sidebar/model';
import { elapsed } from '../format';
import { markdownRenderer } from './markdown';

declare function acquireVsCodeApi(): { postMessage(m: unknown): void };

const vscode = acquireVsCodeApi();
const render0 = markdownRenderer();
// A re-render (every streamed delta) renders only the text that changed: the rest comes from here.
const rendered = new Map<string, string>();
const md = (text: string): string => {
  let html = rendered.get(text);
  if (html === undefined) {
    html = render0(text);
    rendered.set(text, html);
    if (rendered.size > 400) rendered.delete(rendered.keys().next().value as string);
  }
  return html;
};
const content = document.getElementById('content')!;
const form = document.getElementById('ask') as HTMLFormElement;
const prompt = document.getElementById('prompt') as HTMLTextAreaElement;
const askButton = form.querySelector('button[type="submit"]') as HTMLButtonElement;
let last: SidebarSnapshot | undefined;

// Only what markdown-it and render.ts produce survives: no style, no
// scripts, no forms; data-* attributes carry the keys of card actions.
const purify = { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form', 'input', 'textarea'], FORBID_ATTR: ['style'], ALLOW_DATA_ATTR: true };

function render(s: SidebarSnapshot): void {
  last = s;
  const open = new Set([...content.querySelectorAll('details[open]')].map((d) => d.getAttribute('data-key')));
  const closed = new Set([...content.querySelectorAll('details:not([open])')].map((d) => d.getAttribute('data-key')));
  const old = content.querySelector('.messages');
  const atBottom = !old || old.scrollTop + old.clientHeight >= old.scrollHeight - 8;
  const top = old?.scrollTop ?? 0;
  // An older page goes on top: the messages the user was reading stay where they were.
  const firstKey = old?.querySelector('[data-key]')?.getAttribute('data-key');
  const firstTop = firstKey ? (old!.querySelector(`[data-key="${CSS.escape(firstKey)}"]`) as HTMLElement | null)?.offsetTop ?? 0 : 0;
  content.innerHTML = DOMPurify.sanitize(renderSidebar(s, md), purify) as unknown as string;
  for (const d of content.querySelectorAll('details')) {
    const k = d.getAttribute('data-key');
    if (open.has(k)) d.open = true;
    else if (closed.has(k)) d.open = false;
  }
  // Widths through the CSSOM: the CSP allows no inline style attributes.
  for (const el of content.querySelectorAll<HTMLElement>('[data-width]')) el.style.width = `${el.dataset.width}%`;
  for (const el of content.querySelectorAll<HTMLElement>('[data-left]')) el.style.left = `${el.dataset.left}%`;
  // The barrier's elapsed time ticks on from the snapshot, by this page's clock.
  for (const el of content.querySelectorAll<HTMLElement>('[data-elapsed]')) el.dataset.since = String(Date.now() - Number(el.dataset.elapsed));
  const next = content.querySelector('.messages');
  if (next) {
    const moved = firstKey ? (next.querySelector(`[data-key="${CSS.escape(firstKey)}"]`) as HTMLElement | null)?.offsetTop : undefined;
    next.scrollTop = atBottom ? next.scrollHeight : top + (moved !== undefined ? moved - firstTop : 0);
    // Scrolling up to the top loads the next older page (the Load earlier button does it without a scrollbar).
    next.addEventListener('scroll', () => olderOnTop(next), { passive: true });
  }
  const c = controls(s);
  for (const b of document.querySelectorAll<HTMLButtonElement>('.toolbar [data-control]')) {
    b.disabled = !c[b.dataset.control as keyof typeof c];
  }
  askButton.disabled = !c.ask;
}

/** olderOnTop asks for the next older page once the conversation is scrolled to its top. */
let askedOlder = false;
function olderOnTop(list: Element): void {
  if (last?.older !== 'more') {
    askedOlder = false;
    return;
  }
  if (askedOlder || list.scrollTop > 40) return;
  askedOlder = true;
  vscode.postMessage({ type: 'older' });
}

window.addEventListener('message', (ev) => {
  const m = ev.data;
  if (m && m.type === 'state' && m.state) render(m.state as SidebarSnapshot);
});

// Relative times move on without a new state; the barrier's elapsed time every second.
setInterval(() => last && !document.hidden && render(last), 15000);
setInterval(() => {
  for (const el of content.querySelectorAll<HTMLElement>('[data-since]')) el.textContent = elapsed(Date.now() - Number(el.dataset.since));
}, 1000);

const send = () => {
  const text = prompt.value.trim();
  if (!text || askButton.disabled) return;
  vscode.postMessage({ type: 'ask', text });
  prompt.value = '';
};
form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  send();
});
prompt.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey) {
    ev.preventDefault();
    send();
  }
});
for (const b of document.querySelectorAll<HTMLButtonElement>('[data-command]')) {
  b.addEventListener('click', () => vscode.postMessage({ type: 'command', id: b.dataset.command }));
}
content.addEventListener('click', (ev) => {
  const target = ev.target as HTMLElement;
  const copy = target.closest<HTMLElement>('button.copy');
  if (copy) {
    const code = copy.parentElement?.querySelector('code');
    vscode.postMessage({ type: 'copy', text: code?.textContent ?? '' });
    copy.textContent = 'Copied';
    setTimeout(() => (copy.textContent = 'Copy'), 1200);
    return;
  }
  const act = target.closest<HTMLElement>('[data-action]');
  if (act) {
    ev.preventDefault();
    vscode.postMessage({ type: 'action', action: act.dataset.action, key: act.dataset.key, path: act.dataset.path });
  }
});
vscode.postMessage({ type: 'ready' });
