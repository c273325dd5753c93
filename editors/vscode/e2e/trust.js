// Workspace Trust in real VS Code (SPEC R-W5), driven by run-trust-e2e.sh:
// the repository opens in Restricted Mode; SOBA starts the user's soba-lsp
// (not the repository's soba.serverPath), says which of the repository's
// settings are ignored (the server's warning, the status bar's shield) and
// a prompt goes to the user's own model. Trusting the folder in VS Code's
// Workspace Trust editor applies the repository's settings: the next
// prompt goes to the repository's model server. What each model server
// received is checked afterwards (trust-requests.js).
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');
const { checker, statusText, palette, frameWith, until } = require('./workbench');

const URL = process.env.CS_URL;
const SHOTS = process.env.SHOT_DIR || '.';
const MARKER = process.env.MARKER || '';
const t0 = Date.now();
const log = (...a) => console.log(`[trust ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const { checks, check, shot } = checker(log, SHOTS);
const STATUS_BUDGET = /^SOBA [\d.]+[kM]? \/ [\d.]+[kM]? \(\d+%\)$/;
const RESTRICTED = 'First question, in Restricted Mode.';
const TRUSTED = 'Second question, in a trusted folder.';

/** notificationTexts are the texts of the notification toasts shown now. */
async function notificationTexts(page) {
  return (await page.locator('.notifications-toasts .notification-toast').allInnerTexts().catch(() => [])).map((t) => t.replace(/\s+/g, ' '));
}

/** ask sends a prompt from the sidebar's chat and waits for an assistant answer with this text. */
async function ask(page, chat, text, answer) {
  // The Ask button is enabled once the sidebar knows the server is connected.
  await until(page, async () => !(await chat.locator('#ask button[type="submit"]').isDisabled()), 20000);
  await chat.locator('#prompt').fill(text);
  await chat.locator('#prompt').press('Enter');
  log(`sidebar: asked ${JSON.stringify(text)}`);
  return until(page, async () => {
    const all = await chat.locator('.messages .msg.assistant').allInnerTexts();
    return all.some((t) => t.includes(answer)) && all;
  }, 45000);
}

const shield = (page) => page.locator('.statusbar-item[id$="soba.budget"] .codicon-workspace-untrusted').count();

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  let page;
  try {
    page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
    page.on('pageerror', (e) => log('pageerror', e.message));
    await page.goto(URL, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    log('workbench loaded');

    // VS Code keeps the folder in Restricted Mode: its status bar says so.
    const restricted = await until(page, async () => (await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).count()) > 0, 20000);
    check('the folder opens in Restricted Mode', restricted);

    // SOBA runs there (untrustedWorkspaces: limited), with the user's soba-lsp.
    const warnings = new Set();
    const budget = await until(page, async () => {
      for (const t of await notificationTexts(page)) warnings.add(t);
      const s = await statusText(page);
      return STATUS_BUDGET.test(s) && s;
    }, 40000);
    check('SOBA starts in Restricted Mode and shows the budget', budget, JSON.stringify(budget || (await statusText(page))));
    check('the repository\'s soba.serverPath was never started (machine scope, restricted)', MARKER && !fs.existsSync(MARKER), MARKER);

    // The server's warning names the ignored keys and the file; the status bar shows a shield.
    const warning = await until(page, async () => {
      for (const t of await notificationTexts(page)) warnings.add(t);
      return [...warnings].find((t) => /model\.baseURL/.test(t) && /\.soba\/config\.json/.test(t));
    }, 20000);
    check('a warning names the ignored repository settings and the file', warning, JSON.stringify(warning || [...warnings]));
    check('the SOBA status bar item shows the shield while repository settings are ignored', await until(page, async () => (await shield(page)) > 0, 15000));
    const tooltip = await page.locator('.statusbar-item[id$="soba.budget"] a, .statusbar-item[id$="soba.budget"]').first().getAttribute('aria-label').catch(() => '');
    log('status bar aria-label:', tooltip);
    await shot(page, 'trust-restricted.png');

    // A prompt in Restricted Mode goes to the user's own model.
    await page.locator('.activitybar [aria-label^="SOBA"]').first().click();
    const chat = await frameWith(page, '#content [data-testid="budget-text"]');
    if (!chat) throw new Error('the SOBA sidebar webview did not render');
    const first = await ask(page, chat, RESTRICTED, "The user's own model answered.");
    check('restricted: the answer comes from the user\'s own model', first, JSON.stringify(first));
    await shot(page.locator('.part.sidebar'), 'trust-restricted-answer.png');

    // Trust the folder as a user does: the Workspace Trust editor's Trust button.
    await palette(page, 'Workspaces: Manage Workspace Trust');
    const trustButton = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust/ }).first();
    await trustButton.waitFor({ timeout: 15000 });
    await shot(page, 'trust-editor.png');
    await trustButton.click();
    const trusted = await until(page, async () => (await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).count()) === 0, 15000);
    check('the folder is trusted (no Restricted Mode)', trusted);
    check('the shield goes once the server applies the repository\'s settings', await until(page, async () => (await shield(page)) === 0, 20000));
    check('the repository\'s soba.serverPath is still not started after trust (machine scope)', !fs.existsSync(MARKER));
    await page.keyboard.press('Escape');

    // The next prompt goes to the repository's model server.
    // The sidebar is still open (a click on its icon would close it); it is opened only if it is not.
    await palette(page, 'View: Close All Editors');
    let chat2 = await frameWith(page, '#prompt', 3000);
    for (let i = 0; !chat2 && i < 2; i++) {
      await page.locator('.activitybar [aria-label^="SOBA"]').first().click().catch(() => {});
      chat2 = await frameWith(page, '#prompt', 8000);
    }
    if (!chat2) throw new Error('the SOBA sidebar is gone after trusting the folder');
    const second = await ask(page, chat2, TRUSTED, 'The model of .vscode/settings.json answered.');
    check('trusted: the answer comes from the repository\'s model server', second, JSON.stringify(second));
    await shot(page, 'trust-trusted.png');
  } catch (e) {
    check('trust e2e ran to the end', false, e && e.message);
    if (page) await page.screenshot({ path: path.join(SHOTS, 'trust-fail.png') }).catch(() => {});
  } finally {
    await browser.close();
  }
  const failed = checks.filter((c) => !c.ok).length;
  log(`${checks.length - failed} passed, ${failed} failed`);
  process.exit(failed === 0 && checks.length > 0 ? 0 : 1);
})();
