// SidebarModel is the sidebar's state: the budget, the running barrier, the
// latest compactions, files read and modified and the conversation. It
// changes only through the apply* methods, one per notification, so the
// reduction from protocol traffic to what the user sees is tested without an
// editor.
import type { AgentEvent, Budget, CompactionEvent, CompactionResult, SessionTranscript, TranscriptItem } from '../protocol';
import { compactionRow, type BarrierState, type CompactionRow } from '../format';

/** ToolStatus is where a tool call is: asked for, answered ok, or answered with an error. */
export type ToolStatus = 'running' | 'ok' | 'failed';

/** StreamItem is one block of the conversation. Every item has a key that is stable across renders. */
export type StreamItem =
  | { kind: 'user'; key: string; turnId: string; text: string; at: number; entryId?: string }
  | {
      kind: 'assistant';
      key: string;
      turnId: string;
      /** Markdown, as the model streamed it. */
      text: string;
      /** Why the text is not part of the session (a cancelled attempt); the block is shown dimmed with it. */
      discarded?: string;
    }
  /** The model's thinking, kept apart from its answer and shown folded (R-C9). */
  | { kind: 'thinking'; key: string; turnId: string; text: string }
  | {
      kind: 'tool';
      key: string;
      turnId: string;
      toolId: string;
      name: string;
      /** The arguments, pretty-printed JSON (or the raw text when it is not JSON). */
      args: string;
      /** A one-line description of the call: `Read notes.md`, `Ran go test ./...`. */
      title: string;
      status: ToolStatus;
      /** The server's summary of what the call did: "lines 11-30 of 250", "12 matches in 3 files", "exit 1 · 38 lines · FAIL ./x". */
      summary: string;
      /** The workspace file the call is about, for Open file / Open diff. */
      path?: string;
      writes: boolean;
      /** The user's answer when the call was asked about: once, session, denied (a reopened session's cards). */
      approval?: string;
    }
  | {
      kind: 'compaction';
      key: string;
      operationId: string;
      trigger: string;
      outcome: string;
      tokensBefore?: number;
      tokensAfter?: number;
      checkpointId: string;
      quality: string;
      reason: string;
      line: string;
      /** A reopened session's marker: a capsule replaced the history before it. */
      earlier?: boolean;
    }
  | {
      kind: 'error';
      key: string;
      turnId: string;
      text: string;
      /** What the user asked in the failed turn, for Retry. */
      retry?: string;
      /** The cause is something the settings decide (the model server, its key, its limits). */
      settings: boolean;
    }
  | { kind: 'status'; key: string; turnId: string; text: string };

/** SidebarSnapshot is the serialisable state sent to the webview. */
export interface SidebarSnapshot {
  connected: boolean;
  budget?: Budget;
  barrier?: BarrierState;
  /** How long the barrier has run when the snapshot was taken, so the webview can tick on from there. */
  barrierElapsedMs?: number;
  /** A turn is running (between turn_start and turn_end). */
  turnRunning: boolean;
  compactions: CompactionRow[];
  filesRead: string[];
  filesModified: string[];
  stream: StreamItem[];
  /** Older pages of a reopened session: 'more' to load on scrolling up, 'loading' while one is asked for. */
  older?: 'more' | 'loading';
}

export const MAX_COMPACTIONS = 8;
export const MAX_STREAM = 300;
/** MAX_HISTORY bounds the conversation once older pages were loaded by scrolling up. */
export const MAX_HISTORY = 2000;


/** READ_TOOLS and WRITE_TOOLS classify agent tools (PROTOCOL.md "Agent tools"). */
const READ_TOOLS = new Set(['read_file']);
const WRITE_TOOLS = new Set(['write_file', 'edit_file']);

/**
 * SETTINGS_ERROR recognises a failure the user fixes in the settings: the
 * model server cannot be reached or refuses the request, a key is missing,
 * the model is unknown.
 */
const SETTINGS_ERROR = /connection refused|unreachable|no such host|dial tcp|api key|apikey|unauthori[sz]ed|401|403|404|model .*not found|baseURL|context window/i;

export class SidebarModel {
  connected = false;
  budget?: Budget;
  barrier?: BarrierState;
  private barrierStarted = 0;
  compactions: CompactionRow[] = [];
  private filesRead = new Set<string>();
  private filesModified = new Set<string>();
  stream: StreamItem[] = [];
  /** The cursor of the next older page of a reopened session ('' when the chat starts at the session's beginning). */
  olderCursor = '';
  /** An older page is being asked for. */
  loadingOlder = false;
  /** The entry id of each item shown from soba.session.transcript, by key: where to page back from once the top scrolled out. */
  private historyEntry = new Map<string, string>();
  /** Turns started and not ended. */
  private running = new Set<string>();
  /** What the user asked in each turn, for Retry. */
  private asked = new Map<string, string>();
  /** Keys of streamed text that belongs to a finished reply (followed by a tool call). */
  private settled = new Set<string>();
  private seq = 0;
  /** now is the clock of user messages' times (a test sets it). */
  now: () => number = () => Date.now();

  /** applyBudget records a soba/budget notification or a soba.budget result. */
  applyBudget(b: Budget): void {
    this.budget = b;
    if (b.lastCompaction && !this.compactions.some((c) => c.operationId === b.lastCompaction!.operationId)) {
      this.pushCompaction(compactionRow(b.lastCompaction));
    }
    if (b.state !== 'compacting') this.barrier = undefined;
  }

  /** applyCompaction records a soba/compaction notification. */
  applyCompaction(e: CompactionEvent): void {
    if (e.phase === 'start') {
      this.barrier = { operationId: e.operationId, trigger: e.trigger, percentage: e.percentage ?? 0 };
      this.barrierStarted = this.now();
      // The provider refused the request as too long: what it streamed of this attempt is not kept (R-G9).
      if (e.trigger === 'context_overflow') this.dropUnsettledText();
    } else if (e.phase === 'progress') {
      if (this.barrier?.operationId !== e.operationId) this.barrierStarted = this.now();
      const pct = e.percentage ?? this.barrier?.percentage ?? 0;
      this.barrier = { operationId: e.operationId, trigger: e.trigger, percentage: pct };
    } else {
      this.barrier = undefined;
      this.applyResult(e);
    }
  }

  /** applyResult records a terminal compaction (a soba.compact result or an end notification; the same operation may be both). */
  applyResult(r: Partial<CompactionResult> & { operationId?: string }): void {
    if (this.barrier?.operationId === r.operationId) this.barrier = undefined;
    this.pushCompaction(compactionRow(r));
    this.markCompaction(r);
  }

  /**
   * markCompaction puts a marker in the conversation where a compaction
   * ended, so the user sees from where on the model works from a capsule:
   * always for a completed, failed or stale one; a skipped or cancelled
   * one only when the user asked for it (the others change nothing).
   */
  private markCompaction(r: Partial<CompactionResult> & { operationId?: string }): void {
    const outcome = r.outcome ?? '';
    const shown = outcome === 'completed' || outcome === 'failed' || outcome === 'stale' || r.trigger === 'user';
    if (!shown || !outcome) return;
    const id = r.operationId ?? '';
    if (id && this.stream.some((s) => s.kind === 'compaction' && s.operationId === id)) return;
    this.push({
      kind: 'compaction',
      key: this.key('c'),
      operationId: id,
      trigger: r.trigger ?? '',
      outcome,
      tokensBefore: r.tokensBefore,
      tokensAfter: r.tokensAfter,
      checkpointId: r.checkpointId ?? '',
      quality: r.quality ?? '',
      reason: r.reason ?? '',
      line: r.line ?? '',
    });
  }

  private pushCompaction(row: CompactionRow): void {
    const i = row.operationId ? this.compactions.findIndex((c) => c.operationId === row.operationId) : -1;
    if (i >= 0) this.compactions.splice(i, 1);
    this.compactions.unshift(row);
    this.compactions.length = Math.min(this.compactions.length, MAX_COMPACTIONS);
  }

  /**
   * applyUserPrompt shows what the user asked in the stream, before the
   * turn's own events: the server may stream them before the soba.run
   * reply arrives.
   */
  applyUserPrompt(turnId: string, text: string): void {
    this.asked.set(turnId, text);
    if (this.asked.size > MAX_STREAM) this.asked.delete(this.asked.keys().next().value as string);
    const item: StreamItem = { kind: 'user', key: this.key('u'), turnId, text, at: this.now() };
    const first = this.stream.findIndex((s) => s.kind !== 'compaction' && s.turnId === turnId);
    if (first < 0) this.push(item);
    else this.stream.splice(first, 0, item);
  }

  /**
   * applyCommand shows a slash command the user typed in the stream, where a
   * prompt would have appeared, so the text does not vanish, followed by the
   * lines the server answered (an error when it was typed wrong).
   */
  applyCommand(text: string, lines: string[], error = false): void {
    this.push({ kind: 'status', key: this.key('s'), turnId: '', text: `› ${text.trim()}` });
    if (lines.length === 0) return;
    if (error) this.push({ kind: 'error', key: this.key('e'), turnId: '', text: lines.join('\n'), settings: false });
    else this.push({ kind: 'status', key: this.key('s'), turnId: '', text: lines.join('\n') });
  }

  /** applyEvent records a soba/event notification. */
  applyEvent(e: AgentEvent): void {
    switch (e.type) {
      case 'turn_start':
        this.running.add(e.turnId);
        break;
      case 'queued':
        this.push({ kind: 'status', key: this.key('s'), turnId: e.turnId, text: 'Queued: runs after the current turn or compaction' });
        break;
      case 'text': {
        const last = this.stream[this.stream.length - 1];
        if (last && last.kind === 'assistant' && last.turnId === e.turnId && !last.discarded) last.text += e.delta ?? '';
        else this.push({ kind: 'assistant', key: this.key('a'), turnId: e.turnId, text: e.delta ?? '' });
        break;
      }
      case 'thinking': {
        if (e.moved) {
          // The answer streamed so far in this model call was thinking (the server's template had opened the block): it moves.
          const answer = this.unsettled(e.turnId).pop();
          if (answer) this.stream = this.stream.filter((s) => s.key !== answer.key);
        }
        const last = this.stream[this.stream.length - 1];
        if (last && last.kind === 'thinking' && last.turnId === e.turnId) last.text += e.delta ?? '';
        else this.push({ kind: 'thinking', key: this.key('k'), turnId: e.turnId, text: e.delta ?? '' });
        break;
      }
      case 'tool_call': {
        const name = e.name ?? 'tool';
        const args = parseArgs(e.arguments);
        const p = typeof args?.path === 'string' && args.path !== '' ? args.path : undefined;
        // The text before a tool call is part of a reply the model finished: it stays.
        this.settle(e.turnId);
        this.push({
          kind: 'tool',
          key: this.key('t'),
          turnId: e.turnId,
          toolId: e.id ?? '',
          name,
          args: prettyArgs(e.arguments, args),
          title: toolTitle(name, args),
          status: 'running',
          summary: '',
          path: p,
          writes: WRITE_TOOLS.has(name),
        });
        break;
      }
      case 'tool_result': {
        const call = [...this.stream].reverse().find((s): s is Extract<StreamItem, { kind: 'tool' }> => s.kind === 'tool' && s.toolId === e.id);
        const status: ToolStatus = e.ok === false ? 'failed' : 'ok';
        this.recordFiles(e, call);
        if (call) {
          call.status = status;
          call.summary = e.summary ?? '';
        } else {
          this.push({ kind: 'tool', key: this.key('t'), turnId: e.turnId, toolId: e.id ?? '', name: 'tool', args: '', title: 'Tool result', status, summary: e.summary ?? '', writes: false });
        }
        break;
      }
      case 'turn_end':
        if (e.outcome === 'failed') {
          // The failed attempt's streamed text is not in the session: it goes, the error says why.
          this.dropUnsettledText(e.turnId);
          const err = e.error ?? 'unknown error';
          this.push({ kind: 'error', key: this.key('e'), turnId: e.turnId, text: `The turn failed: ${err}`, retry: this.asked.get(e.turnId), settings: SETTINGS_ERROR.test(err) });
        } else if (e.outcome === 'cancelled') {
          for (const s of this.unsettled(e.turnId)) s.discarded = 'cancelled: not kept in the session';
          this.push({ kind: 'status', key: this.key('s'), turnId: e.turnId, text: 'Turn cancelled' });
        }
        for (const s of this.stream) if (s.kind === 'tool' && s.turnId === e.turnId && s.status === 'running') s.status = 'failed';
        this.running.delete(e.turnId);
        break;
      default:
        break;
    }
  }

  /**
   * recordFiles lists the files of a tool result: those the server names
   * (filesRead, filesModified), else, for a server that does not name them,
   * the path of a successful file tool's call. A denied or failed call
   * lists nothing: only what happened is shown (R-C6).
   */
  private recordFiles(e: AgentEvent, call?: Extract<StreamItem, { kind: 'tool' }>): void {
    if (e.ok !== true) return;
    if (e.filesRead || e.filesModified) {
      for (const f of e.filesRead ?? []) this.filesRead.add(f);
      for (const f of e.filesModified ?? []) this.filesModified.add(f);
      return;
    }
    if (call?.path && READ_TOOLS.has(call.name)) this.filesRead.add(call.path);
    if (call?.path && WRITE_TOOLS.has(call.name)) this.filesModified.add(call.path);
  }

  /** settle marks the text streamed so far in a turn as kept (a reply the model finished). */
  private settle(turnId: string): void {
    for (const s of this.unsettled(turnId)) this.settled.add(s.key);
  }

  /** unsettled is a turn's streamed text after its last tool call: the attempt still running. */
  private unsettled(turnId?: string): Extract<StreamItem, { kind: 'assistant' }>[] {
    return this.stream.filter(
      (s): s is Extract<StreamItem, { kind: 'assistant' }> => s.kind === 'assistant' && (turnId === undefined || s.turnId === turnId) && this.running.has(s.turnId) && !this.settled.has(s.key),
    );
  }

  /** dropUnsettledText removes the streamed text of an attempt that the server discarded. */
  private dropUnsettledText(turnId?: string): void {
    const drop = new Set(this.unsettled(turnId).map((s) => s.key));
    if (drop.size > 0) this.stream = this.stream.filter((s) => !drop.has(s.key));
  }

  /** applyCapsuleMarkdown takes the file lists of a capsule's artifact sections. */
  applyCapsuleMarkdown(markdown: string): void {
    for (const f of capsuleSection(markdown, 'Files read')) this.filesRead.add(f);
    for (const f of capsuleSection(markdown, 'Files modified')) this.filesModified.add(f);
  }

  /**
   * rewoundTo keeps the conversation up to and including the user message
   * at index `userIndex` (0-based among the user messages shown) with what
   * the turn answered, and drops everything after: what the session's path
   * now holds. A negative index keeps nothing of the conversation.
   */
  rewoundTo(userIndex: number, keepTurn = true): void {
    let seen = -1;
    let cut = this.stream.length;
    for (let i = 0; i < this.stream.length; i++) {
      const s = this.stream[i];
      if (s.kind !== 'user') continue;
      seen++;
      if (seen === userIndex + (keepTurn ? 1 : 0)) {
        cut = i;
        break;
      }
    }
    if (userIndex < 0 && !keepTurn) cut = 0;
    this.stream = this.stream.slice(0, cut);
    this.running.clear();
    this.barrier = undefined;
  }

  /**
   * applyEarlier shows the requests a reopened session already holds, before
   * anything new, under one line that says where the answers are.
   */
  applyEarlier(points: { text: string; createdAt: string; filesModifiedAfter?: string[] }[]): void {
    if (points.length === 0 || this.stream.some((s) => s.kind === 'user')) return;
    // What the path's tool calls modified after its first request is what the
    // session modified: the reopened session's list is not empty (R-C6: the
    // server lists only successful writes).
    for (const f of points[0].filesModifiedAfter ?? []) this.filesModified.add(f);
    const earlier: StreamItem[] = [
      { kind: 'status', key: this.key('s'), turnId: '', text: `Earlier in this session: ${points.length} request${points.length === 1 ? '' : 's'} (the answers are in the transcript)` },
      ...points.map((p): StreamItem => ({ kind: 'user', key: this.key('u'), turnId: '', text: p.text, at: Date.parse(p.createdAt) || 0 })),
    ];
    this.stream = [...earlier, ...this.stream].slice(-MAX_STREAM);
  }

  /**
   * applyTranscript shows a page of soba.session.transcript: the newest page
   * of a reopened session before anything new (older === false), or an older
   * page on top of the conversation (older === true). Its items are root first.
   */
  applyTranscript(page: SessionTranscript, older: boolean): void {
    const items = page.items.flatMap((i) => this.fromTranscript(i));
    if (older) {
      this.stream = [...items, ...this.stream];
    } else {
      // Only the conversation of this session: anything shown of a session before goes.
      this.stream = [...items, ...this.stream.filter((x) => !this.historyEntry.has(x.key) || items.includes(x))];
    }
    this.olderCursor = page.before;
    this.loadingOlder = false;
    if (this.stream.length > MAX_HISTORY) this.trimTop(this.stream.length - MAX_HISTORY);
  }

  /** trimTop drops the n oldest items; when shown history goes, scrolling up loads it again from the first item kept. */
  private trimTop(n: number): void {
    const dropped = this.stream.splice(0, n);
    if (dropped.some((d) => this.historyEntry.has(d.key))) {
      const first = this.stream.find((x) => this.historyEntry.has(x.key));
      if (first) this.olderCursor = this.historyEntry.get(first.key)!;
    }
    for (const d of dropped) this.historyEntry.delete(d.key);
  }

  private fromTranscript(i: TranscriptItem): StreamItem[] {
    const at = Date.parse(i.createdAt) || 0;
    const key = this.key('h');
    this.historyEntry.set(key, i.entryId);
    switch (i.kind) {
      case 'user':
        return [{ kind: 'user', key, turnId: '', text: i.text, at, entryId: i.entryId }];
      case 'assistant':
        return [{ kind: 'assistant', key, turnId: '', text: i.text }];
      case 'error':
        return [{ kind: 'error', key, turnId: '', text: `The turn failed: ${i.text}`, settings: SETTINGS_ERROR.test(i.text) }];
      case 'checkpoint':
        return [{ kind: 'status', key, turnId: '', text: i.text }];
      case 'compaction': {
        const c = i.compaction;
        return [
          {
            kind: 'compaction',
            key,
            operationId: '',
            trigger: c?.trigger ?? '',
            outcome: 'completed',
            tokensBefore: c?.tokensBefore,
            tokensAfter: c?.tokensAfter,
            checkpointId: c?.checkpointId ?? '',
            quality: c?.quality ?? '',
            reason: '',
            line: i.text,
            earlier: true,
          },
        ];
      }
      case 'tool': {
        const t = i.tool;
        if (!t) return [];
        const args = parseArgs(t.arguments);
        const p = typeof args?.path === 'string' && args.path !== '' ? args.path : undefined;
        const status: ToolStatus = t.ok === undefined ? 'failed' : t.ok ? 'ok' : 'failed';
        if (t.ok === true) {
          for (const f of t.filesModified ?? []) this.filesModified.add(f);
          if (!t.filesModified && p && WRITE_TOOLS.has(t.name)) this.filesModified.add(p);
        }
        return [
          {
            kind: 'tool',
            key,
            turnId: '',
            toolId: t.id,
            name: t.name,
            args: prettyArgs(t.arguments, args),
            title: toolTitle(t.name, args),
            status,
            summary: t.ok === undefined ? 'no result recorded' : t.summary,
            path: p,
            writes: WRITE_TOOLS.has(t.name),
            approval: t.approval,
          },
        ];
      }
    }
    return [];
  }

  /** userMessages are the user messages shown, oldest first. */
  userMessages(): Extract<StreamItem, { kind: 'user' }>[] {
    return this.stream.filter((s): s is Extract<StreamItem, { kind: 'user' }> => s.kind === 'user');
  }

  /** reset forgets the session's state (new or resumed session). */
  reset(): void {
    this.compactions = [];
    this.filesRead.clear();
    this.filesModified.clear();
    this.stream = [];
    this.historyEntry.clear();
    this.olderCursor = '';
    this.loadingOlder = false;
    this.barrier = undefined;
    this.running.clear();
    this.settled.clear();
  }

  private key(prefix: string): string {
    return `${prefix}${++this.seq}`;
  }

  private push(item: StreamItem): void {
    this.stream.push(item);
    // History loaded by scrolling up stays (up to MAX_HISTORY); MAX_STREAM bounds what streams in after it.
    const limit = Math.min(MAX_HISTORY, this.historyEntry.size + MAX_STREAM);
    if (this.stream.length > limit) {
      this.trimTop(this.stream.length - limit);
      // What scrolled out is not looked up any more.
      const shown = new Set(this.stream.map((s) => s.key));
      for (const k of this.settled) if (!shown.has(k)) this.settled.delete(k);
    }
  }

  snapshot(): SidebarSnapshot {
    return {
      connected: this.connected,
      budget: this.budget,
      barrier: this.barrier,
      barrierElapsedMs: this.barrier ? Math.max(0, this.now() - this.barrierStarted) : undefined,
      turnRunning: this.running.size > 0,
      compactions: this.compactions.map((c) => ({ ...c })),
      filesRead: [...this.filesRead].sort(),
      filesModified: [...this.filesModified].sort(),
      stream: this.stream.map((s) => ({ ...s })),
      older: this.loadingOlder ? 'loading' : this.olderCursor ? 'more' : undefined,
    };
  }
}

function parseArgs(args: unknown): Record<string, unknown> | undefined {
  if (typeof args === 'string') {
    try {
      const v = JSON.parse(args);
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined;
    } catch {
      return undefined;
    }
  }
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : undefined;
}

/** MAX_ARGS bounds the arguments shown in a card: a write's content can be a whole file. */
const MAX_ARGS = 4000;

function prettyArgs(raw: unknown, parsed: Record<string, unknown> | undefined): string {
  const s = parsed ? JSON.stringify(parsed, null, 2) : typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw);
  return s.length > MAX_ARGS ? `${s.slice(0, MAX_ARGS)}\n… (${s.length - MAX_ARGS} more characters)` : s;
}

function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

function lineCount(s: unknown): number {
  return typeof s === 'string' && s !== '' ? s.split('\n').length - (s.endsWith('\n') ? 1 : 0) : 0;
}

/** toolTitle says what a tool call does, in words, from its name and arguments. */
export function toolTitle(name: string, a: Record<string, unknown> | undefined): string {
  const str = (k: string) => (typeof a?.[k] === 'string' ? (a[k] as string) : '');
  switch (name) {
    case 'read_file':
      return `Read ${str('path') || 'a file'}`;
    case 'write_file': {
      const n = lineCount(a?.content);
      return `Write ${str('path') || 'a file'}${n ? ` (${n} line${n === 1 ? '' : 's'})` : ''}`;
    }
    case 'edit_file':
      return `Edit ${str('path') || 'a file'}`;
    case 'list_files':
      return `List ${str('path') || 'the workspace'}${str('pattern') ? ` matching ${str('pattern')}` : ''}`;
    case 'grep':
      return `Search for ${clip(str('pattern'), 60)}${str('path') ? ` in ${str('path')}` : ''}`;
    case 'bash':
      return `Run ${clip(str('command'), 80)}`;
    case 'checkpoint':
      return `Mark ${str('kind').replace('_', ' ') || 'a checkpoint'}${str('note') ? `: ${clip(str('note'), 60)}` : ''}`;
    case 'activate_skill':
      return `Use skill ${str('name')}`;
    default: {
      if (!a) return name;
      for (const k of ['path', 'command', 'pattern', 'name', 'query', 'url']) if (str(k)) return `${name} ${clip(str(k), 80)}`;
      return name;
    }
  }
}

/**
 * capsuleSection returns the list items of a `## Title` section of a
 * .capsule.md (PROTOCOL.md "Fixed details"), without list markers or
 * backquotes, up to the next heading.
 */
export function capsuleSection(markdown: string, title: string): string[] {
  const lines = markdown.split(/\r?\n/);
  const start = lines.findIndex((l) => l.trim().toLowerCase() === `## ${title.toLowerCase()}`);
  if (start < 0) return [];
  const items: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (/^#{1,2}\s/.test(l)) break;
    const m = /^\s*[-*]\s+(.*)$/.exec(l);
    if (!m) continue;
    const item = m[1].replace(/`/g, '').trim();
    if (item && !/^\(?none\)?$/i.test(item)) items.push(item);
  }
  return items;
}
