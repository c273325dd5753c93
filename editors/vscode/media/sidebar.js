// The SOBA sidebar's webview script: puts the HTML the extension rendered in
// place (escaped there) and sends the prompt and button clicks back.
(function () {
  const vscode = acquireVsCodeApi();
  const content = document.getElementById('content');
  const form = document.getElementById('ask');
  const prompt = document.getElementById('prompt');
  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m && m.type === 'render' && typeof m.html === 'string') {
      const stream = content.querySelector('.messages');
      const atBottom = !stream || stream.scrollTop + stream.clientHeight >= stream.scrollHeight - 8;
      content.innerHTML = m.html;
      const next = content.querySelector('.messages');
      if (next && atBottom) next.scrollTop = next.scrollHeight;
    }
  });
  const send = () => {
    const text = prompt.value.trim();
    if (!text) return;
    vscode.postMessage({ type: 'ask', text });
    prompt.value = '';
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); send(); });
  prompt.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); send(); }
  });
  for (const b of document.querySelectorAll('[data-command]')) {
    b.addEventListener('click', () => vscode.postMessage({ type: 'command', id: b.getAttribute('data-command') }));
  }
  vscode.postMessage({ type: 'ready' });
})();
