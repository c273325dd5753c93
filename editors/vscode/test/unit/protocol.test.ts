import * as fs from 'fs';
import * as path from 'path';
import { describe, expect, it } from 'vitest';
import { SERVER_COMMANDS } from '../../src/protocol';

const repo = path.resolve(__dirname, '../../../..');

/** protocolPath finds PROTOCOL.md: $SOBA_PROTOCOL_MD, else shared/ beside the repository. */
function protocolPath(): string | undefined {
  const candidates = [process.env.SOBA_PROTOCOL_MD, path.join(repo, '../shared/PROTOCOL.md'), path.join(repo, 'docs/PROTOCOL.md')];
  return candidates.find((p) => p && fs.existsSync(p));
}

describe('server command IDs match the contract', () => {
  const proto = protocolPath();
  it.skipIf(!proto)('SERVER_COMMANDS are the commands table of PROTOCOL.md, in order', () => {
    const text = fs.readFileSync(proto!, 'utf8');
    const table = text.slice(text.indexOf('## Commands'), text.indexOf('## Notifications'));
    const ids = [...table.matchAll(/^\| `(soba\.[A-Za-z.]+)` \|/gm)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(10);
    // The advertised list is the table exactly; the additions of
    // docs/protocol.md (ServerAddition) are answered but not advertised.
    expect([...SERVER_COMMANDS]).toEqual(ids);
  });

  // The wire schema's command IDs (lsp/protocol; lsp/commands.go before it).
  const goFile = [path.join(repo, 'lsp/protocol/protocol.go'), path.join(repo, 'lsp/commands.go')].find((f) => fs.existsSync(f));
  it.skipIf(!goFile)('SERVER_COMMANDS are the Go Command constants', () => {
    const src = fs.readFileSync(goFile!, 'utf8');
    const ids = [...src.matchAll(/^\s*Command\w+\s*=\s*"(soba\.[^"]+)"/gm)].map((m) => m[1]);
    expect([...SERVER_COMMANDS].sort()).toEqual(ids.sort());
  });
});
