// Argument building for the server commands: one JSON object in
// arguments[0] (PROTOCOL.md). Each builder turns what the user typed or
// picked into that object, or throws ArgumentError naming the field, so a bad
// input is caught before it reaches the server.
import type { CapsuleListItem, HistoryPoint, RunArgs, SessionListItem } from './protocol';
import { relativeTime } from './format';

/** ArgumentError is a user input that cannot become a command argument. */
export class ArgumentError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
    this.name = 'ArgumentError';
  }
}

/**
 * runArgs builds soba.run's `{text}` from what the user typed, without the
 * blanks around it; blank text is an error. The server reads the text: a
 * slash command or a prompt.
 */
export function runArgs(text: string | undefined): RunArgs {
  const t = (text ?? '').trim();
  if (t === '') throw new ArgumentError('text', 'SOBA: the prompt is empty');
  return { text: t };
}

/**
 * compactArgs builds soba.compact's `{instructions?}`: blank focus
 * instructions are left out, so the server uses its default summary prompt.
 */
export function compactArgs(instructions: string | undefined): { instructions?: string } {
  const t = (instructions ?? '').trim();
  return t === '' ? {} : { instructions: t };
}

/** autoCompactArgs builds soba.autoCompact's `{enabled}`. */
export function autoCompactArgs(enabled: boolean): { enabled: boolean } {
  return { enabled };
}

export type CheckpointKind = 'milestone' | 'plan_pivot';

/** checkpointArgs builds soba.checkpoint's `{kind, note}`; the note may be empty. */
export function checkpointArgs(kind: CheckpointKind, note: string | undefined): { kind: CheckpointKind; note: string } {
  if (kind !== 'milestone' && kind !== 'plan_pivot') {
    throw new ArgumentError('kind', `SOBA: checkpoint kind must be milestone or plan_pivot, not ${String(kind)}`);
  }
  return { kind, note: (note ?? '').trim() };
}

/** capsuleCreateArgs builds soba.capsule.create's `{title}`; a title is required. */
export function capsuleCreateArgs(title: string | undefined): { title: string } {
  const t = (title ?? '').trim();
  if (t === '') throw new ArgumentError('title', 'SOBA: a capsule needs a title');
  return { title: t };
}

/**
 * capsuleExportArgs builds soba.capsule.export's `{checkpointId, path,
 * overwrite?}`. overwrite is sent only when true: the save dialog has already
 * asked the user to replace an existing file, or `/capsule export … --overwrite`
 * says so.
 */
export function capsuleExportArgs(
  checkpointId: string | undefined,
  path: string | undefined,
  overwrite: boolean,
): { checkpointId: string; path: string; overwrite?: boolean } {
  if (!checkpointId) throw new ArgumentError('checkpointId', 'SOBA: pick a checkpoint to export');
  if (!path) throw new ArgumentError('path', 'SOBA: choose where to save the capsule');
  return overwrite ? { checkpointId, path, overwrite: true } : { checkpointId, path };
}

/** capsuleLoadArgs builds soba.capsule.load's `{path}`. */
export function capsuleLoadArgs(path: string | undefined): { path: string } {
  if (!path) throw new ArgumentError('path', 'SOBA: choose a .capsule.md file to load');
  return { path };
}

/** capsuleShowArgs builds soba.capsule.show's `{checkpointId?}` (absent: the newest). */
export function capsuleShowArgs(checkpointId?: string): { checkpointId?: string } {
  return checkpointId ? { checkpointId } : {};
}

/** sessionResumeArgs builds soba.session.resume's `{sessionId}`. */
export function sessionResumeArgs(sessionId: string | undefined): { sessionId: string } {
  if (!sessionId) throw new ArgumentError('sessionId', 'SOBA: pick a session to resume');
  return { sessionId };
}

/** sessionRewindArgs builds soba.session.rewind's `{entryId}`. */
export function sessionRewindArgs(entryId: string | undefined): { entryId: string } {
  const t = (entryId ?? '').trim();
  if (t === '') throw new ArgumentError('entryId', 'SOBA: name the entry to rewind to');
  return { entryId: t };
}

/** suggestedCapsuleName is the default file name of an exported capsule. */
export function suggestedCapsuleName(item: Pick<CapsuleListItem, 'checkpointId' | 'title'>): string {
  const slug = slugify(item.title);
  return slug ? `${item.checkpointId}-${slug}.capsule.md` : `${item.checkpointId}.capsule.md`;
}

/** slugify makes a short file-name-safe slug of a title. */
export function slugify(title: string | undefined): string {
  return (title ?? '')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
}

/** QuickPick-shaped item (label, description, detail) plus the value it stands for. */
export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  value: T;
}

/**
 * capsulePickItems lists capsules newest first for the capsule pickers: the
 * title (or what made the capsule when it has none), then the trigger, how
 * long ago to the second, and the quality; the id last, for search.
 */
export function capsulePickItems(list: CapsuleListItem[], now = Date.now()): PickItem<CapsuleListItem>[] {
  return [...list]
    .sort((a, b) => (Date.parse(b.createdAt) || 0) - (Date.parse(a.createdAt) || 0))
    .map((c) => ({
      label: c.title || `Capsule from a ${c.trigger.replace(/_/g, ' ')} compaction`,
      description: [c.trigger.replace(/_/g, ' '), relativeTime(c.createdAt, now), c.quality === 'degraded' ? 'degraded (fallback)' : c.quality || ''].filter((x) => x !== '').join(' · '),
      detail: c.checkpointId,
      value: c,
    }));
}

/** fileSize writes a byte count for people: 512 B, 12.3 KB, 4.1 MB. */
export function fileSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * sessionPickItems lists sessions most recently updated first for the
 * session picker: the first request as the title, then when it was last
 * updated (to the second) and its size; the id last, for search.
 */
export function sessionPickItems(list: SessionListItem[], current?: string, now = Date.now()): PickItem<SessionListItem>[] {
  return [...list]
    .sort((a, b) => (Date.parse(b.updatedAt) || 0) - (Date.parse(a.updatedAt) || 0))
    .map((s) => ({
      label: s.title || '(no request yet)',
      description: [
        `updated ${relativeTime(s.updatedAt, now)}`,
        `${s.entries} ${s.entries === 1 ? 'entry' : 'entries'}`,
        typeof s.bytes === 'number' ? fileSize(s.bytes) : '',
        s.sessionId === current ? 'current' : '',
      ]
        .filter((x) => x !== '')
        .join(' · '),
      detail: s.sessionId,
      value: s,
    }));
}

/**
 * historyPickItems lists the rewind points of the current path, newest
 * first: the request (or the checkpoint's note), how long ago to the second,
 * and how many files were modified after it (they stay as they are).
 */
export function historyPickItems(points: HistoryPoint[], now = Date.now()): PickItem<HistoryPoint>[] {
  return [...points].reverse().map((p) => {
    const n = p.filesModifiedAfter?.length ?? 0;
    return {
      label: `${p.kind === 'checkpoint' ? '$(bookmark) ' : '$(comment) '}${p.text.replace(/\s+/g, ' ').trim() || '(empty)'}`,
      description: relativeTime(p.createdAt, now),
      detail: n === 0 ? 'no file modified after this' : `${n} file${n === 1 ? '' : 's'} modified after this, not reverted: ${p.filesModifiedAfter.slice(0, 3).join(', ')}${n > 3 ? ', …' : ''}`,
      value: p,
    };
  });
}
