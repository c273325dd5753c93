// probe: does this soba-lsp serve its commands? Starts the binary (argv[2]) in
// a workspace (argv[3]), initializes, and calls soba.budget and
// soba.session.info. Exit 0: both answered; 3: a command is "not available"
// (-32803) yet; 1: anything else (printed).
'use strict';
const { spawn } = require('child_process');
const p = require('vscode-languageserver-protocol/node');

const [bin, ws] = process.argv.slice(2);
const child = spawn(bin, [], { cwd: ws, stdio: ['pipe', 'pipe', 'inherit'] });
const conn = p.createProtocolConnection(new p.StreamMessageReader(child.stdout), new p.StreamMessageWriter(child.stdin));
conn.onRequest(() => null);
conn.onNotification(() => {});
conn.listen();
const timer = setTimeout(() => { console.error('probe: soba-lsp did not answer within 20 s'); finish(1); }, 20000);
function finish(code) {
  clearTimeout(timer);
  child.kill();
  process.exit(code);
}
(async () => {
  try {
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: `file://${ws}`, capabilities: { window: { workDoneProgress: true } } });
    await conn.sendNotification('initialized', {});
    for (const command of ['soba.budget', 'soba.session.info']) {
      try {
        await conn.sendRequest('workspace/executeCommand', { command, arguments: [{}] });
      } catch (e) {
        if (e && e.code === -32803) {
          console.log(`probe: ${command} answered -32803: ${e.message}`);
          return finish(3);
        }
        throw e;
      }
    }
    console.log('probe: soba-lsp serves soba.budget and soba.session.info');
    finish(0);
  } catch (e) {
    console.error('probe:', e && e.message ? e.message : e);
    finish(1);
  }
})();
