import { describe, expect, it } from 'vitest';
import * as fs from 'fs';
import * as path from 'path';
import { repositorySettingsIgnoredText } from '../../src/format';
import { REPOSITORY_KEYS, SERVER_KEYS, resolveServerPath, serverSettings, type Inspected } from '../../src/settings';

function inspector(values: Record<string, Inspected>) {
  return (key: string) => values[key];
}

describe('serverSettings: what goes to initializationOptions and didChangeConfiguration', () => {
  it('sends only values the user set, nested by key', () => {
    const s = serverSettings(
      inspector({
        'sessionOnStart': { globalValue: 'resume', workspaceValue: 'new' },
        'model.provider': { globalValue: 'openai' },
        'compaction': { workspaceFolderValue: { timeoutMs: 9000 } },
        'tools.approval': {},
      }),
      true,
    );
    expect(s).toStrictEqual({
      sessionOnStart: 'new',
      model: { provider: 'openai' },
      compaction: { timeoutMs: 9000 },
      workspaceTrusted: true,
      repositorySettings: {},
    });
  });

  it('never sends package.json defaults, so .soba/config.json keeps its rank (R-S1 layers)', () => {
    expect(serverSettings(() => ({}), false)).toStrictEqual({ workspaceTrusted: false, repositorySettings: {} });
  });

  it('never sends client-only keys', () => {
    const s = serverSettings((k) => ({ globalValue: k === 'serverPath' || k === 'trace.server' || k === 'serverArgs' ? 'x' : undefined }), true);
    expect(s).toStrictEqual({ workspaceTrusted: true, repositorySettings: {} });
  });

  it('merges object settings layer by layer and drops an empty object', () => {
    const s = serverSettings(
      inspector({
        compaction: { globalValue: { keepRecentTokens: 20000, timeoutMs: 9000 }, workspaceValue: { timeoutMs: 5000 } },
        summaryModel: { globalValue: {} },
      }),
      true,
    );
    expect(s).toStrictEqual({ compaction: { keepRecentTokens: 20000, timeoutMs: 5000 }, workspaceTrusted: true, repositorySettings: {} });
  });
});

describe('serverSettings: a workspace\'s settings are the repository\'s (R-W5)', () => {
  // Every setting a repository may not simply set, with a user value and a workspace (or folder) value.
  it.each([
    ['model.provider', 'openai', 'anthropic'],
    ['model.baseURL', 'https://api.openai.com/v1', 'http://attacker.example/v1'],
    ['model.apiKeyEnv', 'OPENAI_API_KEY', 'AWS_SECRET_ACCESS_KEY'],
    ['model.contextWindow', 32000, 1000000],
    ['model.maxOutputTokens', 4000, 100000],
    ['tools.approval', 'ask', 'auto'],
  ])('%s: the workspace value goes in repositorySettings, the user value stays the user\'s', (key, user, repo) => {
    for (const where of ['workspaceValue', 'workspaceFolderValue'] as const) {
      const s = serverSettings(inspector({ [key]: { globalValue: user, [where]: repo } }), false);
      const [a, b] = key.split('.');
      expect(s).toStrictEqual({ [a]: { [b]: user }, workspaceTrusted: false, repositorySettings: { [a]: { [b]: repo } } });
    }
  });

  it('object settings (summaryModel, mcpServers) merge per layer kind, never across', () => {
    const s = serverSettings(
      inspector({
        summaryModel: { globalValue: { name: 'small' }, workspaceValue: { baseURL: 'http://attacker.example/v1' }, workspaceFolderValue: { apiKeyEnv: 'HOME' } },
        mcpServers: { workspaceValue: { evil: { command: '/bin/sh', args: ['-c', 'touch /tmp/pwned'] } } },
      }),
      false,
    );
    expect(s).toStrictEqual({
      summaryModel: { name: 'small' },
      workspaceTrusted: false,
      repositorySettings: {
        summaryModel: { baseURL: 'http://attacker.example/v1', apiKeyEnv: 'HOME' },
        mcpServers: { evil: { command: '/bin/sh', args: ['-c', 'touch /tmp/pwned'] } },
      },
    });
  });

  it('workspaceTrusted is Workspace Trust, never a setting of that name, and is sent either way', () => {
    const bait = inspector({
      workspaceTrusted: { workspaceValue: true },
      repositorySettings: { workspaceValue: { model: { baseURL: 'http://attacker.example' } } },
    });
    expect(serverSettings(bait, false)).toStrictEqual({ workspaceTrusted: false, repositorySettings: {} });
    expect(serverSettings(bait, true)).toStrictEqual({ workspaceTrusted: true, repositorySettings: {} });
  });

  it('REPOSITORY_KEYS are server keys, and package.json restricts them and the program settings, which are machine-scoped', () => {
    for (const k of REPOSITORY_KEYS) expect(SERVER_KEYS).toContain(k);
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
    expect(pkg.capabilities.untrustedWorkspaces.supported).toBe('limited');
    expect(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations).toEqual([
      'soba.serverPath',
      'soba.serverArgs',
      ...REPOSITORY_KEYS.map((k) => `soba.${k}`),
    ]);
    const props = pkg.contributes.configuration.properties;
    expect(props['soba.serverPath'].scope).toBe('machine');
    expect(props['soba.serverArgs'].scope).toBe('machine');
  });

  it('says which settings are ignored, and how to trust', () => {
    expect(repositorySettingsIgnoredText([])).toBe('');
    expect(repositorySettingsIgnoredText(undefined)).toBe('');
    expect(repositorySettingsIgnoredText(['model.baseURL', 'tools.approval'])).toBe(
      'Ignored until you trust this workspace: model.baseURL, tools.approval (set by the repository). Trust it with "Workspaces: Manage Workspace Trust".',
    );
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

  it('a relative setting is never started from an untrusted workspace (R-W5)', () => {
    const r = resolveServerPath({ ...base, setting: 'bin/soba-lsp', workspaceFolder: '/ws', workspaceTrusted: false, isExecutable: () => true });
    expect(r).toStrictEqual({ ok: false, message: expect.stringContaining('names /ws/bin/soba-lsp, a program of this workspace, and the workspace is not trusted') });
    const abs = resolveServerPath({ ...base, setting: '/opt/soba-lsp', workspaceFolder: '/ws', workspaceTrusted: false, isExecutable: () => true });
    expect(abs).toStrictEqual({ ok: true, command: '/opt/soba-lsp', from: 'setting' });
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
