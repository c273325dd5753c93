// A fake of the `vscode` module, put in its place at the module boundary by
// vitest.config.ts (resolve.alias). It records what the extension shows and
// answers prompts from queues the test fills, so the real extension code runs
// unchanged outside the editor.

export interface ShownMessage {
  level: 'info' | 'warning' | 'error';
  message: string;
  modal: boolean;
  detail?: string;
  items: unknown[];
}

export interface ShownProgress {
  title?: string;
  location: number;
  cancellable: boolean;
  reports: { message?: string; increment?: number }[];
  done: boolean;
  cancel: () => void;
}

type Answer = unknown | ((...args: unknown[]) => unknown);

/** fake is the recorder and the answer queues; reset() clears it between tests. */
export const fake = {
  messages: [] as ShownMessage[],
  /** Answers for showInputBox, showQuickPick, showSaveDialog, showOpenDialog, and message buttons, in order. */
  answers: {
    inputBox: [] as Answer[],
    quickPick: [] as Answer[],
    saveDialog: [] as Answer[],
    openDialog: [] as Answer[],
    message: [] as Answer[],
  },
  asked: { inputBox: [] as unknown[], quickPick: [] as unknown[][], saveDialog: [] as unknown[], openDialog: [] as unknown[] },
  commands: new Map<string, (...args: any[]) => any>(),
  statusItems: [] as FakeStatusBarItem[],
  outputs: new Map<string, FakeOutputChannel>(),
  documents: [] as { language?: string; content: string; uri?: Uri }[],
  contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string | Promise<string> }>(),
  clipboard: '',
  shownDocuments: [] as unknown[],
  progress: [] as ShownProgress[],
  configuration: {} as Record<string, { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown; defaultValue?: unknown }>,
  webviewProviders: new Map<string, unknown>(),
  /** vscode.workspace.isTrusted (Workspace Trust); grantTrust() trusts it. */
  trusted: true,
  reset() {
    this.trusted = true;
    this.messages = [];
    for (const k of Object.keys(this.answers) as (keyof typeof this.answers)[]) this.answers[k] = [];
    this.asked = { inputBox: [], quickPick: [], saveDialog: [], openDialog: [] };
    this.commands.clear();
    this.statusItems = [];
    this.outputs.clear();
    this.documents = [];
    this.contentProviders.clear();
    this.clipboard = '';
    this.shownDocuments = [];
    this.progress = [];
    this.configuration = {};
    this.webviewProviders.clear();
  },
  /** lines returns what was written to an output channel. */
  lines(name = 'SOBA'): string[] {
    return this.outputs.get(name)?.lines ?? [];
  },
};

function next(queue: Answer[], ...args: unknown[]): unknown {
  if (queue.length === 0) return undefined;
  const a = queue.shift();
  return typeof a === 'function' ? (a as (...x: unknown[]) => unknown)(...args) : a;
}

export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  static from(...ds: { dispose(): unknown }[]) {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
  dispose() {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (l: (e: T) => void) => {
    this.listeners.push(l);
    return new Disposable(() => (this.listeners = this.listeners.filter((x) => x !== l)));
  };
  fire(e: T) {
    for (const l of [...this.listeners]) l(e);
  }
  dispose() {
    this.listeners = [];
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class Uri {
  private constructor(readonly scheme: string, readonly fsPath: string) {}
  static file(p: string) {
    return new Uri('file', p);
  }
  static untitled(p: string) {
    return new Uri('untitled', p);
  }
  static from(c: { scheme: string; path: string }) {
    return new Uri(c.scheme, c.path);
  }
  static joinPath(base: Uri, ...parts: string[]) {
    return new Uri(base.scheme, [base.fsPath, ...parts].join('/'));
  }
  get path() {
    return this.fsPath;
  }
  toString() {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class FakeStatusBarItem {
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  name: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  constructor(readonly id: string, readonly alignment: StatusBarAlignment, readonly priority: number) {}
  show() {
    this.visible = true;
  }
  hide() {
    this.visible = false;
  }
  dispose() {
    this.visible = false;
  }
}

export class FakeOutputChannel {
  lines: string[] = [];
  shown = 0;
  constructor(readonly name: string) {}
  appendLine(l: string) {
    this.lines.push(l);
  }
  append(s: string) {
    this.lines.push(s);
  }
  show() {
    this.shown++;
  }
  clear() {
    this.lines = [];
  }
  dispose() {}
}

function message(level: ShownMessage['level']) {
  return (msg: string, ...rest: unknown[]) => {
    let modal = false;
    let detail: string | undefined;
    if (rest.length > 0 && rest[0] && typeof rest[0] === 'object' && !('title' in (rest[0] as object)) && ('modal' in (rest[0] as object) || 'detail' in (rest[0] as object))) {
      const o = rest.shift() as { modal?: boolean; detail?: string };
      modal = o.modal === true;
      detail = o.detail;
    }
    fake.messages.push({ level, message: msg, modal, detail, items: rest });
    return Promise.resolve(next(fake.answers.message, msg, rest));
  };
}

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number) {
    const item = new FakeStatusBarItem(id, alignment, priority);
    fake.statusItems.push(item);
    return item;
  },
  createOutputChannel(name: string) {
    const ch = new FakeOutputChannel(name);
    fake.outputs.set(name, ch);
    return ch;
  },
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showInputBox(options: unknown) {
    fake.asked.inputBox.push(options);
    return Promise.resolve(next(fake.answers.inputBox, options));
  },
  showQuickPick(items: unknown[] | Promise<unknown[]>, options: unknown) {
    return Promise.resolve(items).then((list) => {
      fake.asked.quickPick.push(list);
      return next(fake.answers.quickPick, list, options);
    });
  },
  showSaveDialog(options: unknown) {
    fake.asked.saveDialog.push(options);
    return Promise.resolve(next(fake.answers.saveDialog, options));
  },
  showOpenDialog(options: unknown) {
    fake.asked.openDialog.push(options);
    return Promise.resolve(next(fake.answers.openDialog, options));
  },
  showTextDocument(doc: unknown) {
    fake.shownDocuments.push(doc);
    return Promise.resolve({ document: doc });
  },
  withProgress<R>(
    options: { location: number; title?: string; cancellable?: boolean },
    task: (p: { report: (v: { message?: string; increment?: number }) => void }, token: { isCancellationRequested: boolean; onCancellationRequested: (l: () => void) => Disposable }) => Promise<R>,
  ): Promise<R> {
    const cancelled = new EventEmitter<void>();
    const token = { isCancellationRequested: false, onCancellationRequested: (l: () => void) => cancelled.event(l) };
    const shown: ShownProgress = {
      title: options.title,
      location: options.location,
      cancellable: options.cancellable === true,
      reports: [],
      done: false,
      cancel: () => {
        token.isCancellationRequested = true;
        cancelled.fire();
      },
    };
    fake.progress.push(shown);
    return task({ report: (v) => shown.reports.push(v) }, token).finally(() => (shown.done = true));
  },
  registerWebviewViewProvider(id: string, provider: unknown) {
    fake.webviewProviders.set(id, provider);
    return new Disposable(() => fake.webviewProviders.delete(id));
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: any[]) => any) {
    if (fake.commands.has(id)) throw new Error(`command '${id}' already exists`);
    fake.commands.set(id, fn);
    return new Disposable(() => fake.commands.delete(id));
  },
  executeCommand(id: string, ...args: unknown[]) {
    const fn = fake.commands.get(id);
    if (!fn) return Promise.reject(new Error(`command '${id}' not found`));
    return Promise.resolve(fn(...args));
  },
};

const configChanged = new EventEmitter<{ affectsConfiguration(s: string): boolean }>();

const trustGranted = new EventEmitter<void>();

/** grantTrust trusts the workspace, as the user does in the Workspace Trust editor. */
export function grantTrust(): void {
  fake.trusted = true;
  trustGranted.fire();
}

/** changeConfiguration fires onDidChangeConfiguration for these dotted keys. */
export function changeConfiguration(keys: string[]): void {
  configChanged.fire({ affectsConfiguration: (s: string) => keys.some((k) => k === s || k.startsWith(s + '.')) });
}

export const workspace = {
  workspaceFolders: undefined as { uri: Uri }[] | undefined,
  async openTextDocument(options: { language?: string; content: string } | Uri) {
    if (options instanceof Uri) {
      // A virtual document: its provider gives the content; .md paths are Markdown, as in VS Code.
      const p = fake.contentProviders.get(options.scheme);
      if (!p) throw new Error(`no content provider for ${options.scheme}`);
      const content = await p.provideTextDocumentContent(options);
      const doc = { uri: options, language: options.path.endsWith('.md') ? 'markdown' : undefined, content };
      fake.documents.push(doc);
      return { uri: options, languageId: doc.language, isUntitled: false, getText: () => content };
    }
    fake.documents.push(options);
    const uri = Uri.untitled(`Untitled-${fake.documents.length}`);
    return { uri, languageId: options.language, isUntitled: true, getText: () => options.content };
  },
  registerTextDocumentContentProvider(scheme: string, provider: { provideTextDocumentContent(uri: Uri): string | Promise<string> }) {
    fake.contentProviders.set(scheme, provider);
    return new Disposable(() => fake.contentProviders.delete(scheme));
  },
  getConfiguration(section: string) {
    const full = (k: string) => `${section}.${k}`;
    return {
      get<T>(k: string, dflt?: T): T | undefined {
        const c = fake.configuration[full(k)];
        return (c?.workspaceFolderValue ?? c?.workspaceValue ?? c?.globalValue ?? c?.defaultValue ?? dflt) as T;
      },
      inspect(k: string) {
        const c = fake.configuration[full(k)];
        return c ? { key: full(k), ...c } : undefined;
      },
    };
  },
  onDidChangeConfiguration: configChanged.event,
  get isTrusted() {
    return fake.trusted;
  },
  onDidGrantWorkspaceTrust: trustGranted.event,
};

export const env = {
  openExternal: () => Promise.resolve(true),
  clipboard: {
    writeText(t: string) {
      fake.clipboard = t;
      return Promise.resolve();
    },
  },
};
