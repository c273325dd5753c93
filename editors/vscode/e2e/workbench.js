// Helpers that drive the VS Code workbench (code-server) in headless
// Chromium with playwright-core: checks with a log line each, screenshots
// that must show something, the status bar, the command palette, webview
// frames and polling. Used by e2e.js and trust.js.
'use strict';
const path = require('path');
const { pngStats } = require('./png');

/** checker returns check(name, ok, detail), shot(target, name) and the list of checks, logging as log does. */
function checker(log, shots) {
  const checks = [];
  const check = (name, ok, detail) => {
    checks.push({ name, ok: !!ok });
    log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
    return !!ok;
  };
  /** shot saves a screenshot (of the page or a locator) and checks that it shows something. */
  const shot = async (target, name) => {
    const file = path.join(shots, name);
    let buf;
    // The chat re-renders as notifications arrive: an element may be replaced while it is captured.
    for (let i = 0; ; i++) {
      try {
        buf = await target.screenshot({ path: file });
        break;
      } catch (e) {
        if (i >= 2 || !/not attached|detached/i.test(String(e && e.message))) throw e;
      }
    }
    const s = pngStats(buf);
    check(`${name} is a real picture (${s.width}×${s.height}, ${s.colors} colours, top colour ${(s.dominant * 100).toFixed(0)}%)`, s.colors >= 24 && s.dominant < 0.97 && s.width >= 200 && s.height >= 150);
  };
  return { checks, check, shot };
}

/** statusText is the SOBA status bar item's text. */
async function statusText(page) {
  const item = page.locator('.statusbar-item[id$="soba.budget"]').first();
  return ((await item.innerText({ timeout: 2000 }).catch(() => '')) || '').replace(/\s+/g, ' ').trim();
}

/** palette runs a command by its title from the command palette (asked again when the key is lost to a webview). */
async function palette(page, title) {
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 0; ; attempt++) {
    await page.keyboard.press('Escape');
    await page.keyboard.press(attempt % 2 ? 'Control+Shift+P' : 'F1');
    const shown = await input.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false);
    if (shown) break;
    if (attempt === 3) throw new Error(`the command palette did not open for "${title}"`);
  }
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 20000 });
  await page.keyboard.press('Enter');
}

/** frameWith finds the (nested webview) frame in which selector matches, other than not. */
async function frameWith(page, selector, ms = 20000, not) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    for (const f of page.frames()) {
      if (f === not) continue;
      if (await f.$(selector).catch(() => null)) return f;
    }
    await page.waitForTimeout(250);
  }
  return undefined;
}

/** until polls fn until it returns a truthy value. */
async function until(page, fn, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v || Date.now() > end) return v;
    await page.waitForTimeout(150);
  }
}

module.exports = { checker, statusText, palette, frameWith, until };
