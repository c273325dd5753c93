import { describe, expect, it } from 'vitest';
import { resolveServerPath, serverSettings, type Inspected } from '../../src/settings';

function inspector(values: Record<string, Inspected>) {
  return (key: string) => values[key];
}

describe('serverSettings: what goes to initializationOptions and didChangeConfiguration', () => {
  it('sends only values the user set, nested by key', () => {
    const s = serverSettings(
      inspector({
        'model.provider': { globalValue: 'openai' },
        'model.baseURL': { workspaceValue: 'http://127.0.0.1:8080/v1' },
        'model.contextWindow': { globalValue: 32000, workspaceFolderValue: 16000 },
        'tools.approval': {},
      }),
    );
    expect(s).toStrictEqual({ model: { provider: 'openai', baseURL: 'http://127.0.0.1:8080/v1', contextWindow: 16000 } });
  });

  it('never sends package.json defaults, so .soba/config.json keeps its rank (R-S1 layers)', () => {
    expect(serverSettings(() => ({}))).toStrictEqual({});
  });

  it('never sends client-only keys', () => {
    const s = serverSettings((k) => ({ globalValue: k === 'serverPath' || k === 'trace.server' || k === 'serverArgs' ? 'x' : undefined }));
    expect(s).toStrictEqual({});
  });

  it('merges object settings layer by layer and drops an empty object', () => {
    const s = serverSettings(
      inspector({
        compaction: { globalValue: { keepRecentTokens: 20000, timeoutMs: 9000 }, workspaceValue: { timeoutMs: 5000 } },
        summaryModel: { globalValue: {} },
      }),
    );
    expect(s).toStrictEqual({ compaction: { keepRecentTokens: 20000, timeoutMs: 5000 } });
  });
});

describe('resolveServerPath: setting, then bundled, then PATH', () => {
  const base = { extensionPath: '/ext', envPath: '/usr/bin:/home/u/go/bin', platform: 'linux' as const };
  it.each([
    ['the setting wins', { setting: '/opt/soba-lsp' }, ['/opt/soba-lsp', '/ext/bin/soba-lsp', '/home/u/go/bin/soba-lsp'], { ok: true, command: '/opt/soba-lsp', from: 'setting' }],
    ['a relative setting is under the workspace', { setting: 'bin/soba-lsp', workspaceFolder: '/ws' }, ['/ws/bin/soba-lsp'], { ok: true, command: '/ws/bin/soba-lsp', from: 'setting' }],
    ['bundled before PATH', { setting: '' }, ['/ext/bin/soba-lsp', '/home/u/go/bin/soba-lsp'], { ok: true, command: '/ext/bin/soba-lsp', from: 'bundled' }],
    ['PATH in order', { setting: '  ' }, ['/home/u/go/bin/soba-lsp'], { ok: true, command: '/home/u/go/bin/soba-lsp', from: 'path' }],
  ])('%s', (_n, input, present, want) => {
    const r = resolveServerPath({ ...base, ...input, isExecutable: (f) => present.includes(f) });
    expect(r).toStrictEqual(want);
  });

  it('a missing binary gives a message with the fix', () => {
    const r = resolveServerPath({ ...base, setting: '', isExecutable: () => false });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.message).toContain('cannot find soba-lsp');
      expect(r.message).toContain('go install github.com/soba-agent/soba-lsp/cmd/soba-lsp@latest');
      expect(r.message).toContain('soba.serverPath');
    }
  });

  it('a bad setting names the setting and the file, and does not fall back silently', () => {
    const r = resolveServerPath({ ...base, setting: '/nope/soba-lsp', isExecutable: (f) => f === '/ext/bin/soba-lsp' });
    expect(r).toStrictEqual({ ok: false, message: expect.stringContaining('soba.serverPath is set to "/nope/soba-lsp" but /nope/soba-lsp is not an executable file') });
  });
});
