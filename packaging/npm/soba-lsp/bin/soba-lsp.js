#!/usr/bin/env node
// Runs the soba-lsp binary of this platform, which npm installed as one of
// this package's optional dependencies (@soba-lsp/<os>-<cpu>, chosen by
// their "os" and "cpu" fields), with the arguments, stdin, stdout and
// stderr as given: `npx soba-lsp acp` is the agent an ACP editor starts.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

const pkg = `@soba-lsp/${process.platform}-${process.arch}`;
const exe = process.platform === 'win32' ? 'soba-lsp.exe' : 'soba-lsp';

function binary() {
  if (process.env.SOBA_LSP_BINARY) return process.env.SOBA_LSP_BINARY;
  try {
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'bin', exe);
  } catch {
    process.stderr.write(
      `soba-lsp: the binary for ${process.platform}-${process.arch} is not installed (the optional package ${pkg}).\n` +
      'Reinstall without --no-optional / --omit=optional, or download a release binary, or run\n' +
      '  go install github.com/soba-agent/soba-lsp/cmd/soba-lsp@latest\n');
    process.exit(1);
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
// The editor stops its agent with a signal: it reaches the binary, whose
// exit status (or signal) becomes this process's.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => { if (!child.killed) child.kill(sig); });
}
child.on('error', (err) => {
  process.stderr.write(`soba-lsp: cannot start ${err.path ?? 'the binary'}: ${err.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
