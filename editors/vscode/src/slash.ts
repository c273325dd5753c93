// Slash commands in the text the user sends to the agent
// (docs/slash-commands.md). parseSlash is pure: it turns that text into a
// prompt for the model, a command with its arguments, or an error naming the
// command and its usage. commands.ts runs a command through the palette's own
// handler, so its result is shown exactly as the palette shows it.

/** SlashCommand is one parsed slash command with its arguments. */
export type SlashCommand =
  | { name: 'help' }
  | { name: 'budget' }
  | { name: 'compact'; instructions: string }
  | { name: 'auto-compact'; enabled: boolean }
  | { name: 'milestone'; note: string }
  | { name: 'pivot'; note: string }
  | { name: 'capsule show'; checkpointId?: string }
  | { name: 'capsule list' }
  | { name: 'capsule create'; title: string }
  | { name: 'capsule export'; checkpointId: string; path: string; overwrite: boolean }
  | { name: 'capsule load'; path: string }
  | { name: 'cancel' }
  | { name: 'session new' }
  | { name: 'session info' }
  | { name: 'session list' }
  | { name: 'session resume'; sessionId?: string }
  | { name: 'rewind'; entryId: string };

/** SlashParse is what the user's text means. */
export type SlashParse =
  | { kind: 'prompt'; text: string }
  | { kind: 'command'; command: SlashCommand }
  | { kind: 'error'; command: string; usage: string; message: string };

/** SlashHelpLine is one line of /help: a usage and what it does. */
export interface SlashHelpLine {
  usage: string;
  summary: string;
}

/** SLASH_HELP lists every slash command in the order of docs/slash-commands.md. */
export const SLASH_HELP: readonly SlashHelpLine[] = [
  { usage: '/help', summary: 'lists these commands and their usage' },
  { usage: '/budget', summary: 'shows the budget (SOBA: Show Budget)' },
  { usage: '/compact [instructions…]', summary: 'compacts now, with optional focus instructions (SOBA: Compact Context)' },
  { usage: '/auto-compact on|off', summary: 'switches the soft triggers; the hard limit always compacts' },
  { usage: '/milestone <note…>', summary: 'marks a milestone checkpoint (SOBA: Mark Milestone)' },
  { usage: '/pivot <note…>', summary: 'marks a plan pivot checkpoint (SOBA: Mark Plan Pivot)' },
  { usage: '/capsule', summary: 'shows the newest capsule: what the model now sees' },
  { usage: '/capsule show [checkpointId]', summary: 'shows a capsule (SOBA: Show Latest Capsule)' },
  { usage: '/capsule list', summary: 'lists the checkpoints (SOBA: List Capsules)' },
  { usage: '/capsule create <title…>', summary: 'writes a portable capsule (SOBA: Create Capsule)' },
  { usage: '/capsule export <checkpointId> <path> [--overwrite]', summary: 'exports a capsule; a relative path is in the workspace' },
  { usage: '/capsule load <path>', summary: 'loads a .capsule.md (SOBA: Load Capsule)' },
  { usage: '/cancel', summary: 'cancels the running turn or compaction' },
  { usage: '/session new|info|list', summary: 'starts a session, shows this one, or lists them' },
  { usage: '/session resume [sessionId]', summary: 'resumes a session; without an id it asks' },
  { usage: '/rewind <entryId>', summary: 'moves the session leaf back to an entry (SOBA: Rewind Session)' },
  { usage: '//text', summary: 'sends /text to the model as typed' },
];

/** slashHelp is the text of /help. */
export function slashHelp(): string {
  const width = Math.max(...SLASH_HELP.map((h) => h.usage.length));
  return ['SOBA slash commands (type them in SOBA: Ask or the sidebar):', ...SLASH_HELP.map((h) => `  ${h.usage.padEnd(width)}  ${h.summary}`)].join('\n');
}

const USAGE = {
  help: '/help',
  budget: '/budget',
  compact: '/compact [instructions…]',
  autoCompact: '/auto-compact on|off',
  milestone: '/milestone <note…>',
  pivot: '/pivot <note…>',
  capsule: '/capsule [show [checkpointId] | list | create <title…> | export <checkpointId> <path> [--overwrite] | load <path>]',
  capsuleShow: '/capsule show [checkpointId]',
  capsuleList: '/capsule list',
  capsuleCreate: '/capsule create <title…>',
  capsuleExport: '/capsule export <checkpointId> <path> [--overwrite]',
  capsuleLoad: '/capsule load <path>',
  cancel: '/cancel',
  session: '/session new|info|list|resume [sessionId]',
  sessionSimple: '/session new|info|list',
  sessionResume: '/session resume [sessionId]',
  rewind: '/rewind <entryId>',
} as const;

/** COMMAND_WORD is `/` and a command word at the start, ended by a blank or the end. */
const COMMAND_WORD = /^\/([a-z-]+)(?=\s|$)/;

/**
 * parseSlash reads the text the user sends to the agent. A slash command is
 * `/word` at the start (after blanks); anything else, like `/usr/bin is
 * missing`, is a prompt as typed, and `//` sends the rest with one `/`
 * removed.
 */
export function parseSlash(text: string): SlashParse {
  const start = text.length - text.trimStart().length;
  const body = text.slice(start);
  if (body.startsWith('//')) return { kind: 'prompt', text: body.slice(1) };
  const m = COMMAND_WORD.exec(body);
  if (!m) return { kind: 'prompt', text };
  const word = m[1];
  const line = new Line(body, m[0].length);
  try {
    return { kind: 'command', command: parseCommand(word, line) };
  } catch (err) {
    if (err instanceof UsageError) return { kind: 'error', command: err.command, usage: err.usage, message: err.message };
    throw err;
  }
}

/** UsageError is a slash command that cannot run as typed. */
class UsageError extends Error {
  constructor(readonly command: string, readonly usage: string, problem: string) {
    super(usage ? `SOBA: ${command}: ${problem} · usage: ${usage}` : `SOBA: ${problem}`);
  }
}

function parseCommand(word: string, line: Line): SlashCommand {
  switch (word) {
    case 'help':
      line.end('/help', USAGE.help);
      return { name: 'help' };
    case 'budget':
      line.end('/budget', USAGE.budget);
      return { name: 'budget' };
    case 'cancel':
      line.end('/cancel', USAGE.cancel);
      return { name: 'cancel' };
    case 'compact':
      return { name: 'compact', instructions: line.freeText() };
    case 'auto-compact':
      return { name: 'auto-compact', enabled: onOff(line) };
    case 'milestone':
      return { name: 'milestone', note: line.requiredFreeText('/milestone', USAGE.milestone, '<note…>') };
    case 'pivot':
      return { name: 'pivot', note: line.requiredFreeText('/pivot', USAGE.pivot, '<note…>') };
    case 'capsule':
      return capsule(line);
    case 'session':
      return session(line);
    case 'rewind': {
      const entryId = line.required('/rewind', USAGE.rewind, '<entryId>');
      line.end('/rewind', USAGE.rewind);
      return { name: 'rewind', entryId };
    }
    default:
      throw new UsageError(`/${word}`, '', `unknown command /${word} · /help lists the commands; //${word} sends /${word} to the model`);
  }
}

function onOff(line: Line): boolean {
  const v = line.required('/auto-compact', USAGE.autoCompact, 'on or off');
  line.end('/auto-compact', USAGE.autoCompact);
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new UsageError('/auto-compact', USAGE.autoCompact, `expected on or off, not "${v}"`);
}

function capsule(line: Line): SlashCommand {
  const sub = line.word('/capsule', USAGE.capsule);
  switch (sub) {
    case undefined:
      return { name: 'capsule show' };
    case 'show': {
      const checkpointId = line.word('/capsule show', USAGE.capsuleShow);
      line.end('/capsule show', USAGE.capsuleShow);
      return checkpointId ? { name: 'capsule show', checkpointId } : { name: 'capsule show' };
    }
    case 'list':
      line.end('/capsule list', USAGE.capsuleList);
      return { name: 'capsule list' };
    case 'create':
      return { name: 'capsule create', title: line.requiredFreeText('/capsule create', USAGE.capsuleCreate, '<title…>') };
    case 'export': {
      const [cmd, usage] = ['/capsule export', USAGE.capsuleExport];
      const checkpointId = line.required(cmd, usage, '<checkpointId>');
      const path = line.required(cmd, usage, '<path>');
      const flag = line.word(cmd, usage);
      if (flag !== undefined && flag !== '--overwrite') throw new UsageError(cmd, usage, `unexpected argument "${flag}"`);
      line.end(cmd, usage);
      return { name: 'capsule export', checkpointId, path, overwrite: flag === '--overwrite' };
    }
    case 'load': {
      const path = line.required('/capsule load', USAGE.capsuleLoad, '<path>');
      line.end('/capsule load', USAGE.capsuleLoad);
      return { name: 'capsule load', path };
    }
    default:
      throw new UsageError('/capsule', USAGE.capsule, `unknown subcommand "${sub}"`);
  }
}

function session(line: Line): SlashCommand {
  const sub = line.required('/session', USAGE.session, 'new, info, list or resume');
  switch (sub) {
    case 'new':
      line.end('/session new', USAGE.sessionSimple);
      return { name: 'session new' };
    case 'info':
      line.end('/session info', USAGE.sessionSimple);
      return { name: 'session info' };
    case 'list':
      line.end('/session list', USAGE.sessionSimple);
      return { name: 'session list' };
    case 'resume': {
      const sessionId = line.word('/session resume', USAGE.sessionResume);
      line.end('/session resume', USAGE.sessionResume);
      return sessionId ? { name: 'session resume', sessionId } : { name: 'session resume' };
    }
    default:
      throw new UsageError('/session', USAGE.session, `unknown subcommand "${sub}"`);
  }
}

const BLANK = /\s/;

/**
 * Line reads a command's arguments left to right: words separated by blanks,
 * a word in double quotes may hold blanks and `\"` inside quotes is a quote;
 * a free-text argument is the rest of the line.
 */
class Line {
  constructor(private readonly text: string, private pos: number) {}

  private skipBlanks(): void {
    while (this.pos < this.text.length && BLANK.test(this.text[this.pos])) this.pos++;
  }

  /** word reads the next word, or undefined at the end of the line. */
  word(command: string, usage: string): string | undefined {
    this.skipBlanks();
    if (this.pos >= this.text.length) return undefined;
    if (this.text[this.pos] !== '"') {
      const from = this.pos;
      while (this.pos < this.text.length && !BLANK.test(this.text[this.pos])) this.pos++;
      return this.text.slice(from, this.pos);
    }
    const q = quoted(this.text, this.pos);
    if (!q) throw new UsageError(command, usage, 'unterminated quote');
    if (q.end < this.text.length && !BLANK.test(this.text[q.end])) throw new UsageError(command, usage, 'a closing quote must end the word');
    this.pos = q.end;
    return q.value;
  }

  /** required reads the next word; its absence is an error naming what is missing. */
  required(command: string, usage: string, what: string): string {
    const w = this.word(command, usage);
    if (w === undefined) throw new UsageError(command, usage, `missing ${what}`);
    return w;
  }

  /** end makes anything left on the line an error. */
  end(command: string, usage: string): void {
    const before = this.pos;
    const extra = this.word(command, usage);
    if (extra !== undefined) {
      this.pos = before;
      throw new UsageError(command, usage, `unexpected argument "${extra}"`);
    }
  }

  /**
   * freeText is the rest of the line, trimmed; when it is one quoted word
   * (`"handoff auth work"`) that pair of quotes is removed, otherwise quotes
   * stay as typed (`say "hi" twice`).
   */
  freeText(): string {
    const rest = this.text.slice(this.pos).trim();
    this.pos = this.text.length;
    if (rest.startsWith('"')) {
      const q = quoted(rest, 0);
      if (q && q.end === rest.length) return q.value;
    }
    return rest;
  }

  /** requiredFreeText is freeText that may not be empty. */
  requiredFreeText(command: string, usage: string, what: string): string {
    const t = this.freeText();
    if (t === '') throw new UsageError(command, usage, `missing ${what}`);
    return t;
  }
}

/** quoted reads a double-quoted word starting at `from`: its value and the index after the closing quote. */
function quoted(text: string, from: number): { value: string; end: number } | undefined {
  let value = '';
  for (let i = from + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && text[i + 1] === '"') {
      value += '"';
      i++;
    } else if (c === '"') {
      return { value, end: i + 1 };
    } else {
      value += c;
    }
  }
  return undefined;
}
