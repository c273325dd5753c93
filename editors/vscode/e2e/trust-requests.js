// Checks what each model server of run-trust-e2e.sh received (SPEC R-W5):
// before the folder was trusted, only the user's own model; afterwards, the
// repository's — the model server of .vscode/settings.json, which ranks
// above .soba/config.json, with the model name of .soba/config.json, so both
// of the repository's layers apply once trusted. The user's API key reaches
// the repository's server only then.
'use strict';
const fs = require('fs');
const path = require('path');

const out = process.argv[2];
const read = (name) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(out, `${name}-requests.json`), 'utf8')) || [];
  } catch (e) {
    return { error: String(e && e.message) };
  }
};
const asked = (reqs, text) => Array.isArray(reqs) && reqs.some((r) => JSON.stringify(r.messages || []).includes(text));
const RESTRICTED = 'First question, in Restricted Mode.';
const TRUSTED = 'Second question, in a trusted folder.';
const user = read('user');
const file = read('repofile');
const settings = read('reposettings');
let failed = 0;
const check = (name, ok, detail) => {
  if (!ok) failed++;
  console.log(`[trust-requests] ${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
};
const brief = (reqs) => (Array.isArray(reqs) ? reqs.map((r) => `${r.model} ${r.path}`).join(', ') || 'none' : JSON.stringify(reqs));
check('restricted: the prompt went to the user\'s own model', asked(user, RESTRICTED), brief(user));
check('restricted: the model server of .soba/config.json got no request at all', Array.isArray(file) && file.length === 0, brief(file));
// Its requests after trust carry the whole conversation, the restricted prompt too: each must be one of the trusted prompt.
check('restricted: the model server of .vscode/settings.json got no request before the folder was trusted', Array.isArray(settings) && settings.every((r) => asked([r], TRUSTED)), brief(settings));
check('trusted: the prompt went to the repository\'s model server (.vscode/settings.json\'s URL, .soba/config.json\'s model name)',
  asked(settings, TRUSTED) && settings.every((r) => r.model === 'repo-model'), brief(settings));
check('trusted: the user\'s own model did not get the trusted prompt', Array.isArray(user) && !asked(user, TRUSTED), brief(user));
process.exit(failed === 0 ? 0 : 1);
