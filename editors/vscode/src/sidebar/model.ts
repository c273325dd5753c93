// SidebarModel is the sidebar's state: the budget, the running barrier, the
// latest compactions, files read and modified and the conversation stream.
// It changes only through the apply* methods, one per notification, so the
// reduction from protocol traffic to what the user sees is tested without an
// editor.
import type { AgentEvent, Budget, CompactionEvent } from '../protocol';
import { compactionRow, type BarrierState, type CompactionRow } from '../format';

/** StreamItem is one block of the conversation stream. */
export interface StreamItem {
  turnId: string;
  kind: 'user' | 'assistant' | 'tool' | 'status' | 'error';
  text: string;
  /** Tool call id, to attach its result. */
  toolId?: string;
}

/** SidebarSnapshot is the serialisable state sent to the webview. */
export interface SidebarSnapshot {
  budget?: Budget;
  barrier?: BarrierState;
  compactions: CompactionRow[];
  filesRead: string[];
  filesModified: string[];
  stream: StreamItem[];
}

export const MAX_COMPACTIONS = 8;
export const MAX_STREAM = 300;

/** READ_TOOLS and WRITE_TOOLS classify agent tools (PROTOCOL.md "Agent tools"). */
const READ_TOOLS = new Set(['read_file']);
const WRITE_TOOLS = new Set(['write_file', 'edit_file']);

export class SidebarModel {
  budget?: Budget;
  barrier?: BarrierState;
  compactions: CompactionRow[] = [];
  private filesRead = new Set<string>();
  private filesModified = new Set<string>();
  /** The file tool calls awaiting their result, by call id: a proposal is not a change (R-C6). */
  private pendingFiles = new Map<string, { name: string; path: string }>();
  stream: StreamItem[] = [];

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
    } else if (e.phase === 'progress') {
      const pct = e.percentage ?? this.barrier?.percentage ?? 0;
      this.barrier = { operationId: e.operationId, trigger: e.trigger, percentage: pct };
    } else {
      this.barrier = undefined;
      this.pushCompaction(compactionRow(e));
    }
  }

  /** applyResult records a soba.compact result (the same operation may also arrive as an end notification). */
  applyResult(r: Parameters<typeof compactionRow>[0]): void {
    if (this.barrier?.operationId === r.operationId) this.barrier = undefined;
    this.pushCompaction(compactionRow(r));
  }

  private pushCompaction(row: CompactionRow): void {
    const i = row.operationId ? this.compactions.findIndex((c) => c.operationId === row.operationId) : -1;
    if (i >= 0) this.compactions.splice(i, 1);
    this.compactions.unshift(row);
    this.compactions.length = Math.min(this.compactions.length, MAX_COMPACTIONS);
  }

  /**
   * applyUserPrompt shows what the user asked in the stream, before the
   * turn's own events: the server may stream them before the soba.prompt
   * reply arrives.
   */
  applyUserPrompt(turnId: string, text: string): void {
    const first = this.stream.findIndex((s) => s.turnId === turnId);
    if (first < 0) this.push({ turnId, kind: 'user', text });
    else this.stream.splice(first, 0, { turnId, kind: 'user', text });
  }

  /**
   * applyCommand shows a slash command the user typed in the stream, where a
   * prompt would have appeared, so the text does not vanish, followed by the
   * lines the server answered (an error when it was typed wrong).
   */
  applyCommand(text: string, lines: string[], error = false): void {
    this.push({ turnId: '', kind: 'status', text: `› ${text.trim()}` });
    if (lines.length > 0) this.push({ turnId: '', kind: error ? 'error' : 'status', text: lines.join('\n') });
  }

  /** applyEvent records a soba/event notification. */
  applyEvent(e: AgentEvent): void {
    switch (e.type) {
      case 'turn_start':
        break;
      case 'queued':
        this.push({ turnId: e.turnId, kind: 'status', text: 'queued: runs after the current turn or compaction' });
        break;
      case 'text': {
        const last = this.stream[this.stream.length - 1];
        if (last && last.kind === 'assistant' && last.turnId === e.turnId) last.text += e.delta ?? '';
        else this.push({ turnId: e.turnId, kind: 'assistant', text: e.delta ?? '' });
        break;
      }
      case 'tool_call': {
        this.push({ turnId: e.turnId, kind: 'tool', text: `${e.name ?? 'tool'} ${argSummary(e.arguments)}`, toolId: e.id });
        const p = pathArg(e.arguments);
        if (p && e.id && e.name && (READ_TOOLS.has(e.name) || WRITE_TOOLS.has(e.name))) this.pendingFiles.set(e.id, { name: e.name, path: p });
        break;
      }
      case 'tool_result': {
        this.recordFiles(e);
        const call = [...this.stream].reverse().find((s) => s.kind === 'tool' && s.toolId === e.id);
        const mark = e.ok === false ? '✗' : '✓';
        const summary = e.summary ? ` ${e.summary}` : '';
        if (call) call.text += ` → ${mark}${summary}`;
        else this.push({ turnId: e.turnId, kind: 'tool', text: `${mark}${summary}`, toolId: e.id });
        break;
      }
      case 'turn_end':
        if (e.outcome === 'failed') this.push({ turnId: e.turnId, kind: 'error', text: `turn failed: ${e.error ?? 'unknown error'}` });
        else if (e.outcome === 'cancelled') this.push({ turnId: e.turnId, kind: 'status', text: 'turn cancelled' });
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
  private recordFiles(e: AgentEvent): void {
    const pending = e.id ? this.pendingFiles.get(e.id) : undefined;
    if (e.id) this.pendingFiles.delete(e.id);
    if (e.ok !== true) return;
    if (e.filesRead || e.filesModified) {
      for (const f of e.filesRead ?? []) this.filesRead.add(f);
      for (const f of e.filesModified ?? []) this.filesModified.add(f);
      return;
    }
    if (pending && READ_TOOLS.has(pending.name)) this.filesRead.add(pending.path);
    if (pending && WRITE_TOOLS.has(pending.name)) this.filesModified.add(pending.path);
  }

  /** applyCapsuleMarkdown takes the file lists of a capsule's artifact sections. */
  applyCapsuleMarkdown(markdown: string): void {
    for (const f of capsuleSection(markdown, 'Files read')) this.filesRead.add(f);
    for (const f of capsuleSection(markdown, 'Files modified')) this.filesModified.add(f);
  }

  /** reset forgets the session's state (new or resumed session). */
  reset(): void {
    this.compactions = [];
    this.filesRead.clear();
    this.filesModified.clear();
    this.pendingFiles.clear();
    this.stream = [];
    this.barrier = undefined;
  }

  private push(item: StreamItem): void {
    this.stream.push(item);
    if (this.stream.length > MAX_STREAM) this.stream.splice(0, this.stream.length - MAX_STREAM);
  }

  snapshot(): SidebarSnapshot {
    return {
      budget: this.budget,
      barrier: this.barrier,
      compactions: this.compactions.map((c) => ({ ...c })),
      filesRead: [...this.filesRead].sort(),
      filesModified: [...this.filesModified].sort(),
      stream: this.stream.map((s) => ({ ...s })),
    };
  }
}

function pathArg(args: unknown): string | undefined {
  const a = parseArgs(args);
  return typeof a?.path === 'string' && a.path !== '' ? a.path : undefined;
}

function parseArgs(args: unknown): Record<string, unknown> | undefined {
  if (typeof args === 'string') {
    try {
      return JSON.parse(args);
    } catch {
      return undefined;
    }
  }
  return typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : undefined;
}

/** argSummary shows a tool call's arguments briefly (path or command first). */
function argSummary(args: unknown): string {
  const a = parseArgs(args);
  if (!a) return '';
  for (const k of ['path', 'command', 'pattern', 'name', 'kind']) {
    if (typeof a[k] === 'string') return String(a[k]).slice(0, 120);
  }
  return JSON.stringify(a).slice(0, 120);
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
