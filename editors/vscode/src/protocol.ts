// The editor contract of /work/shared/PROTOCOL.md as TypeScript types. Field
// names and command IDs here must match the server exactly; the tests compare
// SERVER_COMMANDS with the server's executeCommandProvider.commands.

/** Server command IDs (workspace/executeCommand), in PROTOCOL.md order. */
export const ServerCommand = {
  prompt: 'soba.prompt',
  run: 'soba.run',
  cancel: 'soba.cancel',
  budget: 'soba.budget',
  compact: 'soba.compact',
  autoCompact: 'soba.autoCompact',
  checkpoint: 'soba.checkpoint',
  capsuleCreate: 'soba.capsule.create',
  capsuleExport: 'soba.capsule.export',
  capsuleLoad: 'soba.capsule.load',
  capsuleList: 'soba.capsule.list',
  capsuleShow: 'soba.capsule.show',
  sessionInfo: 'soba.session.info',
  sessionList: 'soba.session.list',
  sessionNew: 'soba.session.new',
  sessionResume: 'soba.session.resume',
  sessionRewind: 'soba.session.rewind',
} as const;

/**
 * Commands the server answers besides PROTOCOL.md's (docs/protocol.md). They
 * are not advertised in executeCommandProvider.commands, which is
 * PROTOCOL.md's table exactly; the extension calls them all the same.
 */
export const ServerAddition = {
  /** The rewind picker's points. */
  sessionHistory: 'soba.session.history',
  sessionTranscript: 'soba.session.transcript',
} as const;

export type ServerCommandId =
  | (typeof ServerCommand)[keyof typeof ServerCommand]
  | (typeof ServerAddition)[keyof typeof ServerAddition];

/** SERVER_COMMANDS lists the advertised server command IDs, PROTOCOL.md's table. */
export const SERVER_COMMANDS: readonly ServerCommandId[] = Object.values(ServerCommand);

/** Notification methods the server sends besides the standard LSP ones. */
export const Notification = {
  budget: 'soba/budget',
  compaction: 'soba/compaction',
  event: 'soba/event',
} as const;

/** Seven triggers of R-G1. */
export type Trigger =
  | 'hard_limit'
  | 'milestone'
  | 'plan_pivot'
  | 'turn_complete'
  | 'auto_threshold'
  | 'user'
  | 'context_overflow';

/** Terminal outcomes of R-B4. */
export type Outcome = 'completed' | 'skipped' | 'cancelled' | 'stale' | 'failed';

export interface CompactionResult {
  operationId: string;
  trigger: Trigger | string;
  outcome: Outcome | string;
  tokensBefore: number;
  tokensAfter: number;
  reclaimedTokens: number;
  reclaimedRatio: number;
  checkpointId: string;
  /** `full`, `degraded`, or empty when nothing was appended. */
  quality: 'full' | 'degraded' | '' | string;
  durationMs: number;
  reason: string;
  /** The one-line result of R-B3. */
  line: string;
}

export interface Budget {
  effectiveTokens: number;
  hardLimit: number;
  softLimit: number;
  contextWindow: number;
  maxOutputTokens: number;
  safetyReserveTokens: number;
  source: 'provider_usage' | 'estimated' | string;
  autoCompact: boolean;
  pending: string[];
  state: 'idle' | 'generating' | 'tool' | 'compacting' | string;
  lastCompaction: CompactionResult | null;
  /** The part of the last request's input the provider read from its prompt cache (0 until reported). */
  cachedTokens: number;
  /** The status text, "14.0k / 17.0k (82%)": one number format for both editors (docs/protocol.md). */
  display: string;
  /** While some are: the repository's own settings ignored because the workspace is not trusted (SPEC R-W5). */
  repositorySettingsIgnored?: string[];
}

/** A `soba/compaction` notification. On `end` the CompactionResult fields are present. */
export interface CompactionEvent extends Partial<CompactionResult> {
  phase: 'start' | 'progress' | 'end';
  operationId: string;
  trigger: string;
  percentage?: number;
  title?: string;
  message?: string;
  elapsedMs?: number;
}

/** A `soba/event` notification: one item of the agent's stream. */
export interface AgentEvent {
  turnId: string;
  type: 'turn_start' | 'text' | 'thinking' | 'tool_call' | 'tool_result' | 'turn_end' | 'queued' | string;
  delta?: string;
  /** thinking: delta is the answer text streamed so far in this model call, which turned out to be thinking; move it out of the answer. */
  moved?: boolean;
  id?: string;
  name?: string;
  arguments?: unknown;
  ok?: boolean;
  summary?: string;
  /** tool_result: the files a successful call read and changed (none when denied or failed, R-C6). */
  filesRead?: string[];
  filesModified?: string[];
  outcome?: 'completed' | 'cancelled' | 'failed' | string;
  error?: string;
}

export interface PromptResult { turnId: string; queued: boolean }
/** soba.run's argument: what the user typed to the agent. */
export interface RunArgs { text: string }
/** soba.run for a prompt: soba.prompt's result plus kind. */
/** text is what went to the model (`//x` sends `/x`). */
export interface RunPromptResult { kind: 'prompt'; turnId: string; queued: boolean; text: string }
/** soba.run for a slash command: the lines to show, the command it ran and its result; error when typed wrong (nothing ran). */
export interface RunCommandResult { kind: 'command'; lines: string[]; command?: ServerCommandId | string; result?: unknown; error?: string }
export type RunResult = RunPromptResult | RunCommandResult;
export interface CancelResult { cancelled: boolean; what: 'turn' | 'compaction' | 'none' | string }
export interface CheckpointResult { checkpointId: string }
export interface CapsuleCreateResult { checkpointId: string; path: string }
export interface CapsuleExportResult { path: string }
export interface CapsuleLoadResult { checkpointId: string; title: string; warnings: string[] }
export interface CapsuleListItem {
  checkpointId: string;
  trigger: string;
  title: string;
  quality: string;
  createdAt: string;
}
export interface CapsuleShowResult { checkpointId: string; markdown: string }
export interface SessionInfo { sessionId: string; path: string; flightPath: string; leafId: string; entries: number }
/** title (the first user request, clipped) and bytes are additions to PROTOCOL.md. */
export interface SessionListItem { sessionId: string; path: string; updatedAt: string; entries: number; title: string; bytes: number }
export interface SessionNewResult { sessionId: string; path: string }
export interface SessionResumeResult { sessionId: string; path: string; leafId: string }
export interface SessionRewindResult { leafId: string }
/** The kinds of soba.session.history points. */
export type HistoryKind = 'user' | 'checkpoint';
/**
 * One point of soba.session.history (an addition to PROTOCOL.md), root first:
 * pass rewindTo to soba.session.rewind to go back to just before it; the
 * files in filesModifiedAfter were modified after that point and are not reverted.
 */
export interface HistoryPoint {
  entryId: string;
  kind: HistoryKind | string;
  text: string;
  createdAt: string;
  rewindTo: string;
  filesModifiedAfter: string[];
}
/** The kinds of soba.session.transcript items. */
export type TranscriptKind = 'user' | 'assistant' | 'tool' | 'compaction' | 'checkpoint' | 'error';
/**
 * A page of soba.session.transcript (an addition to PROTOCOL.md): the current
 * path's conversation, items root first; pass `before` back for the next
 * older page ('' when this page starts at the session's beginning).
 */
export interface SessionTranscript { items: TranscriptItem[]; before: string; leafId: string }
/** One block of a reopened session's chat. */
export interface TranscriptItem {
  entryId: string;
  kind: TranscriptKind | string;
  createdAt: string;
  text: string;
  tool?: TranscriptTool | null;
  compaction?: TranscriptCompaction | null;
}
/** A tool item's call and result; `ok` is absent while the path holds no result. */
export interface TranscriptTool {
  id: string;
  name: string;
  arguments?: unknown;
  ok?: boolean;
  summary: string;
  approval?: 'once' | 'session' | 'denied' | string;
  filesModified?: string[];
}
/** A compaction item's capsule (soba.capsule.show with its checkpointId shows it). */
export interface TranscriptCompaction { checkpointId: string; trigger: string; tokensBefore: number; tokensAfter: number; quality: string }
/**
 * The `soba` member of the approval's window/showMessageRequest params: the
 * tool, the whole summary, for a write or an edit the path and the file's
 * content after the change (for a diff), and the scope the allow action for
 * the session covers ("file edits", "bash commands").
 */
export interface ApprovalDetail { tool: string; summary: string; path?: string; proposed?: string; scope?: string }

/** Approval actions of window/showMessageRequest (lsp/approve.go). */
export const ApprovalAction = {
  allowOnce: 'Allow once',
  /** Without a scope; with one the action names it: `Allow ${scope} for this session` (lsp/approve.go). */
  allowSession: 'Allow for session',
  deny: 'Deny',
} as const;

/** JSON-RPC error codes the server answers commands with. */
export const ErrorCode = {
  invalidParams: -32602,
  requestFailed: -32803,
} as const;
