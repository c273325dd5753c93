// Baselines are the workspace files as the extension first saw them in this
// session, so "Open diff" on a write or an edit compares the file with what
// it was before the agent changed it. A file is captured when a tool call
// first names it (read_file, write_file, edit_file). The tool may already
// have run by the time the notification is handled (approval "auto"), so a
// capture that already shows the change is undone from the call itself
// where it can be (an edit: new text back to old text) and dropped where it
// cannot (a whole-file write): then no earlier version is known and the
// file opens alone.
import * as fs from 'fs';
import * as path from 'path';

/** MAX_BASELINE bounds a captured file; larger files are not diffed. */
export const MAX_BASELINE = 2 * 1024 * 1024;

/** Baseline is a file's earlier content; `undefined` content means the file did not exist. */
export interface Baseline {
  content: string | undefined;
}

export class Baselines {
  private files = new Map<string, Baseline | null>();

  constructor(private readonly root: () => string | undefined) {}

  /** resolve turns a tool path into an absolute path inside the workspace, or undefined (outside, or a symlink out). */
  resolve(rel: string): string | undefined {
    const root = this.root();
    if (!root || rel === '') return undefined;
    const abs = path.resolve(root, rel);
    const inside = (p: string, r: string) => p === r || p.startsWith(r.endsWith(path.sep) ? r : r + path.sep);
    if (!inside(abs, root)) return undefined;
    try {
      const real = fs.realpathSync(abs);
      if (!inside(real, fs.realpathSync(root))) return undefined;
    } catch {
      // Not there (yet): the lexical check is all there is to make.
    }
    return abs;
  }

  /** read returns a regular file's content within the bound, undefined when absent, null when it cannot be a baseline. */
  private read(abs: string): string | undefined | null {
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch {
      return undefined;
    }
    if (!st.isFile() || st.size > MAX_BASELINE) return null;
    const fd = fs.openSync(abs, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    try {
      const buf = Buffer.alloc(Math.min(st.size, MAX_BASELINE) + 1);
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      if (n > MAX_BASELINE) return null;
      return buf.subarray(0, n).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  }

  /** sawCall captures a file the first time a tool call names it. */
  sawCall(name: string, args: Record<string, unknown> | undefined): void {
    const rel = typeof args?.path === 'string' ? args.path : '';
    if (!['read_file', 'write_file', 'edit_file'].includes(name) || this.files.has(rel)) return;
    const abs = this.resolve(rel);
    if (!abs) return;
    const now = this.read(abs);
    if (now === null) {
      this.files.set(rel, null);
      return;
    }
    if (name === 'write_file' && typeof args?.content === 'string' && now === args.content) {
      // Captured after the write: the earlier content is gone.
      this.files.set(rel, null);
      return;
    }
    if (name === 'edit_file' && now !== undefined && typeof args?.old_text === 'string' && typeof args?.new_text === 'string') {
      const { old_text: oldText, new_text: newText } = args as { old_text: string; new_text: string };
      if (oldText !== newText && !now.includes(oldText) && now.includes(newText)) {
        this.files.set(rel, { content: now.replace(newText, oldText) });
        return;
      }
    }
    this.files.set(rel, { content: now });
  }

  /** get is a file's baseline: content or undefined (it did not exist); null when none is known. */
  get(rel: string): Baseline | null {
    return this.files.get(rel) ?? null;
  }

  clear(): void {
    this.files.clear();
  }
}
