// What the extension sends the server as configuration, and where it finds
// the server binary. Pure: the vscode configuration and the file system come
// in as functions, so both are unit-tested without an editor.
import * as path from 'path';
import { SERVER_KEYS } from './settingsSchema';

// SERVER_KEYS, the `soba.*` settings that belong to the server, are
// generated from the server's configuration schema (configschema/schema.go).
export { SERVER_KEYS } from './settingsSchema';

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
 */
export function serverSettings(inspect: (key: string) => Inspected | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const i = inspect(key);
    if (!i) continue;
    let v = i.workspaceFolderValue ?? i.workspaceValue ?? i.globalValue;
    if (v === undefined || v === null) continue;
    if (isPlainObject(v)) {
      // Object settings (summaryModel, compaction) merge layer by layer,
      // like vscode does, and an empty object means "not set".
      v = { ...(asObject(i.globalValue)), ...(asObject(i.workspaceValue)), ...(asObject(i.workspaceFolderValue)) };
      if (Object.keys(v as object).length === 0) continue;
    }
    setPath(out, key.split('.'), v);
  }
  return out;
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
    const file = path.isAbsolute(expanded) || !input.workspaceFolder ? expanded : path.join(input.workspaceFolder, expanded);
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
