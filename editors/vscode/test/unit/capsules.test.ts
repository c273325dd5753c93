import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fake, Uri } from '../fake/vscode';
import { Baselines, MAX_BASELINE } from '../../src/baselines';
import { capsuleUri, CapsuleDocuments, checkpointOf, stripFrontMatter } from '../../src/capsules';
import type { ServerCommandId } from '../../src/protocol';

beforeEach(() => fake.reset());

describe('capsules as read-only soba-capsule: documents (R-P1)', () => {
  it.each([
    ['front matter and the blank line after it go', '---\ncheckpointId: ck_1\nsha256: ab12\n---\n\n# Capsule\n## Goal\n', '# Capsule\n## Goal\n'],
    ['CRLF front matter', '---\r\nid: x\r\n---\r\n# T\r\n', '# T\r\n'],
    ['no front matter: as is', '# Capsule\n---\nnot front matter\n---\n', '# Capsule\n---\nnot front matter\n---\n'],
    ['an unclosed block is not front matter', '---\nid: x\n# T\n', '---\nid: x\n# T\n'],
  ])('%s', (_name, input, want) => expect(stripFrontMatter(input)).toBe(want));

  it('names the checkpoint in the URI and reads it back; nothing else is a capsule', () => {
    const u = capsuleUri('ck_21267c');
    expect(u.toString()).toBe('soba-capsule:///ck_21267c.capsule.md');
    expect(checkpointOf(u)).toBe('ck_21267c');
    expect(checkpointOf(Uri.from({ scheme: 'soba-capsule', path: '/../../etc/passwd' }) as never)).toBeUndefined();
  });

  it('serves a document by asking soba.capsule.show for its checkpoint, once', async () => {
    const sent: { command: ServerCommandId; args: object }[] = [];
    const docs = new CapsuleDocuments({
      async execute<T>(command: ServerCommandId, args: object) {
        sent.push({ command, args });
        return { checkpointId: 'ck_2', markdown: '---\na: b\n---\n# Two\n' } as T;
      },
    });
    expect(await docs.provideTextDocumentContent(capsuleUri('ck_2'))).toBe('# Two\n');
    expect(await docs.provideTextDocumentContent(capsuleUri('ck_2'))).toBe('# Two\n');
    expect(sent).toEqual([{ command: 'soba.capsule.show', args: { checkpointId: 'ck_2' } }]);
  });
});

describe('Baselines: the file before the session changed it, for Open diff', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-base-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('captures a file when a call first names it and keeps that first version', () => {
    fs.writeFileSync(path.join(root, 'a.go'), 'package a\n');
    const b = new Baselines(() => root);
    b.sawCall('read_file', { path: 'a.go' });
    fs.writeFileSync(path.join(root, 'a.go'), 'package a\n\nfunc A() {}\n');
    b.sawCall('write_file', { path: 'a.go', content: 'package a\n\nfunc A() {}\n' });
    expect(b.get('a.go')).toEqual({ content: 'package a\n' });
  });

  it('undoes an edit captured after it ran; a whole write captured too late has no baseline; a new file is empty', () => {
    fs.writeFileSync(path.join(root, 'e.go'), 'x := 2\n');
    fs.writeFileSync(path.join(root, 'w.go'), 'new\n');
    const b = new Baselines(() => root);
    b.sawCall('edit_file', { path: 'e.go', old_text: 'x := 1', new_text: 'x := 2' });
    b.sawCall('write_file', { path: 'w.go', content: 'new\n' });
    b.sawCall('write_file', { path: 'n.go', content: 'n\n' });
    expect(b.get('e.go')).toEqual({ content: 'x := 1\n' });
    expect(b.get('w.go')).toBeNull();
    expect(b.get('n.go')).toEqual({ content: undefined });
  });

  it('never reads outside the workspace, through .. or a symlink, nor a file over the bound', () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'soba-out-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret'), 'secret\n');
      fs.symlinkSync(path.join(outside, 'secret'), path.join(root, 'leak'));
      fs.writeFileSync(path.join(root, 'big'), Buffer.alloc(MAX_BASELINE + 1));
      const b = new Baselines(() => root);
      for (const p of ['../' + path.basename(outside) + '/secret', 'leak', path.join(outside, 'secret'), 'big']) b.sawCall('read_file', { path: p });
      expect(b.get('leak')).toBeNull();
      expect(b.get('big')).toBeNull();
      expect(b.resolve('leak')).toBeUndefined();
      expect(b.resolve('../x')).toBeUndefined();
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });
});
