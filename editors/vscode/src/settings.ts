// What the extension sends the server as configuration, and where it finds
// the server binary. Pure: the vscode configuration and the file system come
// in as functions, so both are unit-tested without an editor.
import * as path from 'path';
import { REPOSITORY_KEYS, SERVER_KEYS } from './settingsSchema';

// SERVER_KEYS, the `soba.*` settings that belong to the server, are
// generated from the server's configuration schema (configschema/schema.go).
export { REPOSITORY_KEYS, SERVER_KEYS } from './settingsSchema';

/** Inspected is the part of vscode's WorkspaceConfiguration.inspect the extension reads. */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * serverSettings builds the `soba` object for initializationOptions and
 * didChangeConfiguration from the values the user actually set (user,
 * workspace or folder). Defaults of package.json are left out on purpose:
 * sending them would override `~/.config/soba/config.json` and
 * `.soba/config.json`, which rank below the editor's layer.
 *
 * A workspace's settings (.vscode/settings.json, a folder's) are the
 * repository's, not the user's (SPEC R-W5): for the REPOSITORY_KEYS they go
 * in `repositorySettings`, which the server holds to the repository's rules
 * until the workspace is trusted, and only user (global) values are sent
 * as the user's. `workspaceTrusted` is VS Code's Workspace Trust, never a
 * setting: both are set here last, so no settings file can name them.
 */
export function serverSettings(inspect: (key: string) => Inspected | undefined, workspaceTrusted: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const repository: Record<string, unknown> = {};
  const repositoryKeys: ReadonlySet<string> = new Set(REPOSITORY_KEYS);
  for (const key of SERVER_KEYS) {
    if (OWN_KEYS.has(key)) continue;
    const i = inspect(key);
    if (!i) continue;
    if (repositoryKeys.has(key)) {
      setLayered(out, key, [i.globalValue]);
      setLayered(repository, key, [i.workspaceValue, i.workspaceFolderValue]);
    } else {
      setLayered(out, key, [i.globalValue, i.workspaceValue, i.workspaceFolderValue]);
    }
  }
  out.workspaceTrusted = workspaceTrusted;
  out.repositorySettings = repository;
  return out;
}

/** OWN_KEYS are the extension's to send: a setting of the same name is never read. */
const OWN_KEYS: ReadonlySet<string> = new Set(['workspaceTrusted', 'repositorySettings']);

/**
 * setLayered sets key in obj to the value of the most specific layer that
 * has one (layers from the least specific). Object settings (summaryModel,
 * compaction, mcpServers) merge layer by layer, like vscode does, and an
 * empty object means "not set".
 */
function setLayered(obj: Record<string, unknown>, key: string, layers: unknown[]): void {
  let v: unknown;
  for (const l of layers) if (l !== undefined && l !== null) v = l;
  if (v === undefined) return;
  if (isPlainObject(v)) {
    v = Object.assign({}, ...layers.map(asObject));
    if (Object.keys(v as object).length === 0) return;
  }
  setPath(obj, key.split('.'), v);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asObject(v: unknown): Record<string, unknown> {
  return isPlainObject(v) ? v : {};
}

function setPath(obj: Record<string, unknown>, keys: string[], v: unknown): void {
  let cur = obj;
  for (const k of keys.slice(0, -1)) {
    if (!isPlainObject(cur[k])) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]] = v;
}

/** ServerPathResult is the binary to start, or why there is none. */
export type ServerPathResult =
  | { ok: true; command: string; from: 'setting' | 'bundled' | 'path' }
  | { ok: false; message: string };

export interface ServerPathInput {
  /** The soba.serverPath setting ('' when unset). */
  setting: string;
  /** The extension's install directory (holds bin/soba-lsp when bundled). */
  extensionPath: string;
  /** PATH of the extension host. */
  envPath: string;
  /** Workspace folder for a relative serverPath. */
  workspaceFolder?: string;
  /**
   * Whether the workspace is trusted (VS Code's Workspace Trust). A relative
   * serverPath names a file of the workspace, a program the repository
   * chose: it is started only in a trusted workspace (SPEC R-W5).
   */
  workspaceTrusted?: boolean;
  /** isExecutable reports whether a file exists and can be run. */
  isExecutable: (file: string) => boolean;
  platform?: NodeJS.Platform;
}

/** INSTALL_HINT tells the user how to get the server. */
export const INSTALL_HINT =
  'Install it with `go install github.com/soba-agent/soba-lsp/cmd/soba-lsp@latest` (then make sure $(go env GOPATH)/bin is on PATH), or set "soba.serverPath" to the binary.';

/**
 * resolveServerPath picks the soba-lsp binary: the soba.serverPath setting,
 * else bin/soba-lsp inside the extension, else soba-lsp on PATH. When none
 * is found the message says which places were tried and how to fix it.
 */
export function resolveServerPath(input: ServerPathInput): ServerPathResult {
  const exe = (input.platform ?? process.platform) === 'win32' ? 'soba-lsp.exe' : 'soba-lsp';
  const setting = input.setting.trim();
  if (setting !== '') {
    const expanded = expandHome(setting);
    const inWorkspace = !path.isAbsolute(expanded) && !!input.workspaceFolder;
    const file = inWorkspace ? path.join(input.workspaceFolder!, expanded) : expanded;
    if (inWorkspace && input.workspaceTrusted === false) {
      return {
        ok: false,
        message: `SOBA: soba.serverPath "${setting}" is relative, so it names ${file}, a program of this workspace, and the workspace is not trusted. Trust it ("Workspaces: Manage Workspace Trust") or set an absolute path.`,
      };
    }
    if (input.isExecutable(file)) return { ok: true, command: file, from: 'setting' };
    return {
      ok: false,
      message: `SOBA: soba.serverPath is set to "${setting}" but ${file} is not an executable file. Fix the setting, or clear it to use soba-lsp from PATH.`,
    };
  }
  const bundled = path.join(input.extensionPath, 'bin', exe);
  if (input.isExecutable(bundled)) return { ok: true, command: bundled, from: 'bundled' };
  const sep = (input.platform ?? process.platform) === 'win32' ? ';' : ':';
  for (const dir of input.envPath.split(sep)) {
    if (!dir) continue;
    const file = path.join(dir, exe);
    if (input.isExecutable(file)) return { ok: true, command: file, from: 'path' };
  }
  return {
    ok: false,
    message: `SOBA: cannot find soba-lsp (not bundled in the extension, not on PATH). ${INSTALL_HINT}`,
  };
}

function expandHome(p: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE;
  if (home && (p === '~' || p.startsWith('~/'))) return path.join(home, p.slice(1));
  return p;
}
