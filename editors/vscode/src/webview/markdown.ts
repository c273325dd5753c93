// markdownRenderer is the conversation's Markdown: CommonMark and GFM tables
// by markdown-it with raw HTML off (a model's `<script>` stays text), links
// only to http(s) and mailto, and every fenced or indented code block with a
// Copy button. The webview sanitises its output again with DOMPurify.
import MarkdownIt from 'markdown-it';
import type { Markdown } from '../sidebar/render';

const SAFE_LINK = /^(https?:|mailto:)/i;

export function markdownRenderer(): Markdown {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
  md.validateLink = (url: string) => SAFE_LINK.test(url.trim());
  const code = (content: string, lang: string) => {
    const cls = lang ? ` class="language-${md.utils.escapeHtml(lang)}"` : '';
    return `<div class="code-block"><button class="copy" type="button" title="Copy to the clipboard">Copy</button><pre><code${cls}>${md.utils.escapeHtml(content)}</code></pre></div>\n`;
  };
  md.renderer.rules.fence = (tokens, idx) => {
    const t = tokens[idx];
    return code(t.content, t.info.trim().split(/\s+/)[0] ?? '');
  };
  md.renderer.rules.code_block = (tokens, idx) => code(tokens[idx].content, '');
  return (text: string) => md.render(text);
}
