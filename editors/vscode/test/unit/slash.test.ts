import { describe, expect, it } from 'vitest';
import { parseSlash, SLASH_HELP, slashHelp, type SlashCommand } from '../../src/slash';

// One case per rule of the grammar of docs/slash-commands.md.
describe('grammar: what is a slash command and what goes to the model', () => {
  it.each([
    ['plain text is a prompt', 'add a test for the parser', 'add a test for the parser'],
    ['a path with a slash after the word is a prompt', '/usr/bin is missing', '/usr/bin is missing'],
    ['a file path is a prompt', '/tmp/x.go fails', '/tmp/x.go fails'],
    ['a slash and punctuation is a prompt', '/*comment*/', '/*comment*/'],
    ['a slash and a blank is a prompt', '/ x', '/ x'],
    ['a lone slash is a prompt', '/', '/'],
    ['an upper-case word is not a command word', '/Budget please', '/Budget please'],
    ['a digit in the word is not a command word', '/v2 of the api', '/v2 of the api'],
    ['a slash that is not at the start is a prompt', 'run /budget later', 'run /budget later'],
    ['// sends the rest with one / removed', '//compact means what?', '/compact means what?'],
    ['// after leading blanks too', '  //budget', '/budget'],
    ['/// keeps two slashes', '///x', '//x'],
  ])('%s', (_rule, text, prompt) => {
    expect(parseSlash(text)).toStrictEqual({ kind: 'prompt', text: prompt });
  });

  it.each<[string, string, SlashCommand]>([
    ['a command word ends at the end of the text', '/budget', { name: 'budget' }],
    ['leading blanks before the slash are skipped', '  \t/budget', { name: 'budget' }],
    ['a command word ends at a blank', '/auto-compact off', { name: 'auto-compact', enabled: false }],
    ['a command word ends at a tab or a newline', '/rewind\te_1\n', { name: 'rewind', entryId: 'e_1' }],
    ['arguments are separated by any run of blanks', '/capsule   export  ck_1   a.md', { name: 'capsule export', checkpointId: 'ck_1', path: 'a.md', overwrite: false }],
    ['a word in double quotes may hold blanks', '/capsule load "my notes/a b.capsule.md"', { name: 'capsule load', path: 'my notes/a b.capsule.md' }],
    ['\\" inside quotes is a quote', '/capsule load "say \\"hi\\".md"', { name: 'capsule load', path: 'say "hi".md' }],
    ['an empty quoted word is an empty argument', '/capsule show ""', { name: 'capsule show' }],
    ['a quote inside an unquoted word is literal', '/capsule load a"b.md', { name: 'capsule load', path: 'a"b.md' }],
    ['free text is the rest of the line', '/compact keep the failing test names', { name: 'compact', instructions: 'keep the failing test names' }],
    ['free text loses one pair of surrounding quotes', '/capsule create "handoff auth work"', { name: 'capsule create', title: 'handoff auth work' }],
    ['free text keeps quotes that do not surround it', '/milestone "parser" done "today"', { name: 'milestone', note: '"parser" done "today"' }],
    ['free text keeps inner blanks and a lone quote as typed', '/pivot use  SAX, not "DOM', { name: 'pivot', note: 'use  SAX, not "DOM' }],
    ['free text runs over newlines', '/compact keep\nthe API', { name: 'compact', instructions: 'keep\nthe API' }],
  ])('%s', (_rule, text, command) => {
    expect(parseSlash(text)).toStrictEqual({ kind: 'command', command });
  });
});

describe('commands of docs/slash-commands.md (R-O3: budget, compact, auto-compact, capsule …)', () => {
  it.each<[string, SlashCommand]>([
    ['/help', { name: 'help' }],
    ['/budget', { name: 'budget' }],
    ['/compact', { name: 'compact', instructions: '' }],
    ['/compact   ', { name: 'compact', instructions: '' }],
    ['/compact keep the API decisions', { name: 'compact', instructions: 'keep the API decisions' }],
    ['/auto-compact on', { name: 'auto-compact', enabled: true }],
    ['/auto-compact off', { name: 'auto-compact', enabled: false }],
    ['/milestone parser done', { name: 'milestone', note: 'parser done' }],
    ['/pivot switch to SAX', { name: 'pivot', note: 'switch to SAX' }],
    ['/capsule', { name: 'capsule show' }],
    ['/capsule show', { name: 'capsule show' }],
    ['/capsule show ck_abc', { name: 'capsule show', checkpointId: 'ck_abc' }],
    ['/capsule list', { name: 'capsule list' }],
    ['/capsule create handoff auth work', { name: 'capsule create', title: 'handoff auth work' }],
    ['/capsule export ck_abc ./handoff.capsule.md', { name: 'capsule export', checkpointId: 'ck_abc', path: './handoff.capsule.md', overwrite: false }],
    ['/capsule export ck_1 a.md --overwrite', { name: 'capsule export', checkpointId: 'ck_1', path: 'a.md', overwrite: true }],
    ['/capsule load ./handoff.capsule.md', { name: 'capsule load', path: './handoff.capsule.md' }],
    ['/cancel', { name: 'cancel' }],
    ['/session new', { name: 'session new' }],
    ['/session info', { name: 'session info' }],
    ['/session list', { name: 'session list' }],
    ['/session resume', { name: 'session resume' }],
    ['/session resume s_20250101', { name: 'session resume', sessionId: 's_20250101' }],
    ['/rewind e_42', { name: 'rewind', entryId: 'e_42' }],
  ])('%s', (text, command) => {
    expect(parseSlash(text)).toStrictEqual({ kind: 'command', command });
  });
});

describe('errors name the command and its usage', () => {
  it.each([
    ['/budget now', '/budget', 'SOBA: /budget: unexpected argument "now" · usage: /budget'],
    ['/help me', '/help', 'SOBA: /help: unexpected argument "me" · usage: /help'],
    ['/cancel it', '/cancel', 'SOBA: /cancel: unexpected argument "it" · usage: /cancel'],
    ['/auto-compact', '/auto-compact', 'SOBA: /auto-compact: missing on or off · usage: /auto-compact on|off'],
    ['/auto-compact maybe', '/auto-compact', 'SOBA: /auto-compact: expected on or off, not "maybe" · usage: /auto-compact on|off'],
    ['/auto-compact off now', '/auto-compact', 'SOBA: /auto-compact: unexpected argument "now" · usage: /auto-compact on|off'],
    ['/milestone', '/milestone', 'SOBA: /milestone: missing <note…> · usage: /milestone <note…>'],
    ['/pivot ""', '/pivot', 'SOBA: /pivot: missing <note…> · usage: /pivot <note…>'],
    ['/capsule show ck_1 ck_2', '/capsule show', 'SOBA: /capsule show: unexpected argument "ck_2" · usage: /capsule show [checkpointId]'],
    ['/capsule list all', '/capsule list', 'SOBA: /capsule list: unexpected argument "all" · usage: /capsule list'],
    ['/capsule create', '/capsule create', 'SOBA: /capsule create: missing <title…> · usage: /capsule create <title…>'],
    ['/capsule export', '/capsule export', 'SOBA: /capsule export: missing <checkpointId> · usage: /capsule export <checkpointId> <path> [--overwrite]'],
    ['/capsule export ck_abc', '/capsule export', 'SOBA: /capsule export: missing <path> · usage: /capsule export <checkpointId> <path> [--overwrite]'],
    ['/capsule export ck_1 a.md --force', '/capsule export', 'SOBA: /capsule export: unexpected argument "--force" · usage: /capsule export <checkpointId> <path> [--overwrite]'],
    ['/capsule export ck_1 a.md --overwrite x', '/capsule export', 'SOBA: /capsule export: unexpected argument "x" · usage: /capsule export <checkpointId> <path> [--overwrite]'],
    ['/capsule load', '/capsule load', 'SOBA: /capsule load: missing <path> · usage: /capsule load <path>'],
    ['/capsule load a.md b.md', '/capsule load', 'SOBA: /capsule load: unexpected argument "b.md" · usage: /capsule load <path>'],
    ['/capsule load "a b.md', '/capsule load', 'SOBA: /capsule load: unterminated quote · usage: /capsule load <path>'],
    ['/capsule load "a"b.md', '/capsule load', 'SOBA: /capsule load: a closing quote must end the word · usage: /capsule load <path>'],
    ['/capsule drop ck_1', '/capsule', 'SOBA: /capsule: unknown subcommand "drop" · usage: /capsule [show [checkpointId] | list | create <title…> | export <checkpointId> <path> [--overwrite] | load <path>]'],
    ['/session', '/session', 'SOBA: /session: missing new, info, list or resume · usage: /session new|info|list|resume [sessionId]'],
    ['/session delete', '/session', 'SOBA: /session: unknown subcommand "delete" · usage: /session new|info|list|resume [sessionId]'],
    ['/session new now', '/session new', 'SOBA: /session new: unexpected argument "now" · usage: /session new|info|list'],
    ['/session info x', '/session info', 'SOBA: /session info: unexpected argument "x" · usage: /session new|info|list'],
    ['/session list x', '/session list', 'SOBA: /session list: unexpected argument "x" · usage: /session new|info|list'],
    ['/session resume s1 s2', '/session resume', 'SOBA: /session resume: unexpected argument "s2" · usage: /session resume [sessionId]'],
    ['/rewind', '/rewind', 'SOBA: /rewind: missing <entryId> · usage: /rewind <entryId>'],
    ['/rewind e_1 e_2', '/rewind', 'SOBA: /rewind: unexpected argument "e_2" · usage: /rewind <entryId>'],
  ])('%s', (text, command, message) => {
    const r = parseSlash(text);
    expect(r).toMatchObject({ kind: 'error', command, message });
  });

  it('an unknown command word is an error that points to /help and the // escape', () => {
    expect(parseSlash('/etc is missing')).toStrictEqual({
      kind: 'error',
      command: '/etc',
      usage: '',
      message: 'SOBA: unknown command /etc · /help lists the commands; //etc sends /etc to the model',
    });
  });
});

describe('/help', () => {
  it('lists every command of docs/slash-commands.md with its usage', () => {
    const help = slashHelp();
    for (const usage of [
      '/help', '/budget', '/compact [instructions…]', '/auto-compact on|off', '/milestone <note…>', '/pivot <note…>', '/capsule',
      '/capsule show [checkpointId]', '/capsule list', '/capsule create <title…>', '/capsule export <checkpointId> <path> [--overwrite]',
      '/capsule load <path>', '/cancel', '/session new|info|list', '/session resume [sessionId]', '/rewind <entryId>',
    ]) {
      expect(help.split('\n').some((l) => l.trimStart().startsWith(usage + ' '))).toBe(true);
    }
    expect(help.split('\n')).toHaveLength(SLASH_HELP.length + 1);
  });

  it('every usage it shows parses: a command, not a prompt', () => {
    for (const { usage } of SLASH_HELP.filter((h) => !h.usage.startsWith('//'))) {
      // The example of a usage: the first alternative, placeholders filled in.
      const example = usage.replace(/\|[a-z|]+/g, '').replace(/<[^>]+>/g, 'x').replace(/\[[^\]]*\]/g, '');
      expect(parseSlash(example).kind, example).toBe('command');
    }
  });
});
