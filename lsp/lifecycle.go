package lsp

import (
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// ServerName is serverInfo.name.
const ServerName = "soba-lsp"

// initialize creates the backend and answers the capabilities. It runs
// inline on the read loop, so no other request is handled meanwhile.
func (s *Server) initialize(raw jsonrpc2.RawMessage) (any, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state != stateCreated {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize: server is already %s", state)
	}

	var p lsproto.InitializeParams
	if len(raw) > 0 {
		if err := lsproto.Unmarshal(raw, &p); err != nil {
			return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "initialize: bad params: %v", err)
		}
	}
	if w := p.Capabilities.Window; w != nil && w.WorkDoneProgress != nil && *w.WorkDoneProgress {
		s.progress.setClientSupport(true)
	}

	opts := BackendOptions{
		Root:       workspaceRoot(&p),
		ClientName: p.ClientInfo.Name,
		Notifier:   &editorNotifier{s: s},
		Approver:   &editorApprover{s: s},
	}
	if len(p.InitializationOptions) > 0 && !isJSONNull(json.RawMessage(p.InitializationOptions)) {
		opts.InitializationOptions = json.RawMessage(append([]byte(nil), p.InitializationOptions...))
	}
	// The backend outlives this request: give it the connection's context.
	b, err := s.factory(s.baseCtx, opts)
	if err != nil {
		return nil, jsonrpc2.Errorf(CodeRequestFailed, "initialize: %v", err)
	}

	s.mu.Lock()
	s.backend, s.state = b, stateInitializing
	s.mu.Unlock()
	s.progress.setCanceller(func(operationID string) {
		if !b.CancelCompaction(operationID) {
			s.log.Debug("progress cancelled, but no compaction was running", "operationId", operationID)
		}
	})
	s.log.Info("initialized", "root", opts.Root, "client", opts.ClientName)
	return initializeResult(s.version), nil
}

// initializeResult is the capabilities of PROTOCOL.md "initialize".
func initializeResult(version string) *lsproto.InitializeResult {
	yes := true
	change := lsproto.TextDocumentSyncKindIncremental
	return &lsproto.InitializeResult{
		Capabilities: lsproto.ServerCapabilities{
			TextDocumentSync: &lsproto.TextDocumentSyncOptions{
				OpenClose: &yes,
				Change:    &change,
				Save:      lsproto.Boolean(true),
			},
			ExecuteCommandProvider: lsproto.ExecuteCommandOptions{
				Commands: append([]string(nil), Commands...),
			},
		},
		ServerInfo: lsproto.ServerInfo{
			Name:    ServerName,
			Version: lsproto.NewOptional(version),
		},
	}
}

// workspaceRoot picks the root directory: rootUri, else the first workspace
// folder, else rootPath.
func workspaceRoot(p *lsproto.InitializeParams) string {
	if p.RootURI != nil && *p.RootURI != "" {
		return fsPath(*p.RootURI)
	}
	if folders, ok := p.WorkspaceFolders.Get(); ok && len(folders) > 0 {
		return fsPath(folders[0].URI)
	}
	if path, ok := p.RootPath.Get(); ok {
		return path
	}
	return ""
}

func fsPath(u uri.URI) string {
	if u.IsFile() {
		return u.FsPath()
	}
	return string(u)
}

func (s *Server) initialized() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateInitializing {
		s.state = stateInitialized
	}
	return nil
}

// shutdown closes the backend (flushing every appended entry) and moves to
// the shutdown state; only exit is accepted after it.
func (s *Server) shutdown() (any, error) {
	s.mu.Lock()
	state := s.state
	if state == stateCreated {
		s.mu.Unlock()
		return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "shutdown: server not initialized")
	}
	s.state, s.shutdownSeen = stateShutdown, true
	s.mu.Unlock()
	if err := s.closeBackend(); err != nil {
		return nil, jsonrpc2.Errorf(CodeRequestFailed, "shutdown: closing the session: %v", err)
	}
	return nil, nil
}

// didChangeConfiguration passes settings.soba to the backend. A bad value
// is shown to the user naming the key; the server keeps running.
func (s *Server) didChangeConfiguration(b Backend, raw jsonrpc2.RawMessage) error {
	var p struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		s.out.showMessage(lsproto.MessageTypeError, fmt.Sprintf("soba: configuration not applied: bad didChangeConfiguration params: %v", err))
		return nil
	}
	var settings struct {
		Soba json.RawMessage `json:"soba"`
	}
	if len(p.Settings) > 0 && jsonKind(p.Settings) == "an object" {
		if err := json.Unmarshal(p.Settings, &settings); err != nil {
			s.out.showMessage(lsproto.MessageTypeError, fmt.Sprintf("soba: configuration not applied: %v", err))
			return nil
		}
	}
	if len(settings.Soba) == 0 || isJSONNull(settings.Soba) {
		return nil // nothing for soba in this change
	}
	if err := b.Configure(settings.Soba); err != nil {
		s.out.showMessage(lsproto.MessageTypeError, "soba: configuration not applied: "+err.Error())
	}
	return nil
}

// documentSync forwards didOpen/didChange/didSave/didClose with the URI.
func documentSync(b Backend, method string, raw jsonrpc2.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI     string `json:"uri"`
			Version int32  `json:"version"`
		} `json:"textDocument"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("%s: bad params: %w", method, err)
	}
	if p.TextDocument.URI == "" {
		return fmt.Errorf("%s: textDocument.uri is required", method)
	}
	switch method {
	case MethodDidOpen:
		b.DidOpen(p.TextDocument.URI)
	case MethodDidChange:
		b.DidChange(p.TextDocument.URI, p.TextDocument.Version)
	case MethodDidSave:
		b.DidSave(p.TextDocument.URI)
	case MethodDidClose:
		b.DidClose(p.TextDocument.URI)
	}
	return nil
}
