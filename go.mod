module github.com/soba-agent/soba-lsp

go 1.26.8

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260623181947-01eb4420fa68 // indirect
	github.com/gofrs/flock v0.13.2 // indirect
	github.com/sourcegraph/conc v0.3.0 // indirect
	github.com/tiktoken-go/tokenizer v0.10.0 // indirect
	github.com/yuin/goldmark v1.8.7 // indirect
	go.lsp.dev/jsonrpc2 v1.0.1 // indirect
	go.lsp.dev/protocol v1.0.1 // indirect
	go.lsp.dev/uri v1.0.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
