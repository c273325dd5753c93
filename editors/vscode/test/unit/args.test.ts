import { describe, expect, it } from 'vitest';
import {
  ArgumentError,
  autoCompactArgs,
  capsuleCreateArgs,
  capsuleExportArgs,
  capsuleLoadArgs,
  capsulePickItems,
  capsuleShowArgs,
  checkpointArgs,
  compactArgs,
  fileSize,
  sessionPickItems,
  sessionResumeArgs,
  runArgs,
  sessionRewindArgs,
  slugify,
  suggestedCapsuleName,
} from '../../src/args';

describe('command argument building (PROTOCOL.md Commands)', () => {
  it.each([
    ['soba.run', () => runArgs('  fix the test  '), { text: 'fix the test' }],
    ['soba.compact without focus', () => compactArgs(''), {}],
    ['soba.compact blank focus', () => compactArgs('   '), {}],
    ['soba.compact undefined focus', () => compactArgs(undefined), {}],
    ['soba.compact with focus', () => compactArgs(' keep API decisions '), { instructions: 'keep API decisions' }],
    ['soba.autoCompact on', () => autoCompactArgs(true), { enabled: true }],
    ['soba.autoCompact off', () => autoCompactArgs(false), { enabled: false }],
    ['soba.checkpoint milestone', () => checkpointArgs('milestone', ' parser done '), { kind: 'milestone', note: 'parser done' }],
    ['soba.checkpoint plan_pivot, empty note', () => checkpointArgs('plan_pivot', undefined), { kind: 'plan_pivot', note: '' }],
    ['soba.capsule.create', () => capsuleCreateArgs(' Handoff '), { title: 'Handoff' }],
    ['soba.capsule.export new file', () => capsuleExportArgs('ck_1', '/w/a.capsule.md', false), { checkpointId: 'ck_1', path: '/w/a.capsule.md' }],
    ['soba.capsule.export replaces a confirmed file', () => capsuleExportArgs('ck_1', '/w/a.capsule.md', true), { checkpointId: 'ck_1', path: '/w/a.capsule.md', overwrite: true }],
    ['soba.capsule.load', () => capsuleLoadArgs('/w/a.capsule.md'), { path: '/w/a.capsule.md' }],
    ['soba.capsule.show newest', () => capsuleShowArgs(), {}],
    ['soba.capsule.show one', () => capsuleShowArgs('ck_2'), { checkpointId: 'ck_2' }],
    ['soba.session.resume', () => sessionResumeArgs('s1'), { sessionId: 's1' }],
    ['soba.session.rewind', () => sessionRewindArgs(' e3 '), { entryId: 'e3' }],
  ])('%s', (_name, build, want) => {
    expect(build()).toStrictEqual(want);
  });

  it.each([
    ['text', () => runArgs('   ')],
    ['text', () => runArgs(undefined)],
    ['title', () => capsuleCreateArgs('')],
    ['checkpointId', () => capsuleExportArgs(undefined, '/x', false)],
    ['path', () => capsuleExportArgs('ck', '', false)],
    ['path', () => capsuleLoadArgs(undefined)],
    ['sessionId', () => sessionResumeArgs('')],
    ['entryId', () => sessionRewindArgs('  ')],
    ['kind', () => checkpointArgs('nope' as never, 'x')],
  ])('bad input names the field %s', (field, build) => {
    let err: unknown;
    try {
      build();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as ArgumentError).field).toBe(field);
    expect((err as Error).message).toMatch(/^SOBA: /);
  });
});

describe('pick items and file names', () => {
  it('lists capsules newest first with title, trigger, relative time to the second and quality', () => {
    const items = capsulePickItems(
      [
        { checkpointId: 'ck_a', trigger: 'user', title: 'first', quality: 'full', createdAt: '2025-01-01T10:00:00Z' },
        // Nanosecond timestamps, as the server writes them, sort and read the same.
        { checkpointId: 'ck_b', trigger: 'plan_pivot', title: '', quality: 'degraded', createdAt: '2025-01-02T09:58:53.123456789Z' },
      ],
      Date.parse('2025-01-02T10:00:00Z'),
    );
    expect(items.map((i) => i.label)).toEqual(['Capsule from a plan pivot compaction', 'first']);
    expect(items[0].description).toBe('plan pivot · 1 min 7 s ago · degraded (fallback)');
    expect(items[1].description).toBe('user · 1 day 0 h ago · full');
    expect(items.map((i) => i.detail)).toEqual(['ck_b', 'ck_a']);
    expect(items[1].value.checkpointId).toBe('ck_a');
  });

  it('lists sessions most recent first and marks the current one', () => {
    const items = sessionPickItems(
      [
        { sessionId: 's1', path: 'a', updatedAt: '2025-01-01', entries: 3, title: 'first', bytes: 300 },
        { sessionId: 's2', path: 'b', updatedAt: '2025-01-03', entries: 9, title: 'second', bytes: 900 },
      ],
      's1',
      Date.parse('2025-01-03T00:00:05Z'),
    );
    expect(items.map((i) => i.label)).toEqual(['second', 'first']);
    expect(items.map((i) => i.detail)).toEqual(['s2', 's1']);
    expect(items[1].description).toBe('updated 2 days 0 h ago · 3 entries · 300 B · current');
    expect(items[0].description).toBe('updated 5 s ago · 9 entries · 900 B');
  });

  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [12_600, '12.3 KB'],
    [5 * 1024 * 1024, '5.0 MB'],
  ])('fileSize(%d) = %s', (n, want) => expect(fileSize(n)).toBe(want));

  it('suggests <checkpointId>-<slug>.capsule.md', () => {
    expect(suggestedCapsuleName({ checkpointId: 'ck_8f2a1c', title: 'Parser refactor: handoff!' })).toBe('ck_8f2a1c-parser-refactor-handoff.capsule.md');
    expect(suggestedCapsuleName({ checkpointId: 'ck_1', title: '' })).toBe('ck_1.capsule.md');
    expect(slugify('Ünïcödé  Títle')).toBe('unicode-title');
    expect(slugify('x'.repeat(80)).length).toBe(48);
  });
});
