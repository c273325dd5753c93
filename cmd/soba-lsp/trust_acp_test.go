package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/soba-agent/soba-lsp/agent/provider/providertest"
)

// denyingACPClient is an ACP client that denies every permission and
// offers no file system or terminal.
type denyingACPClient struct{}

var errNoFS = errors.New("no file system or terminal in this client")

func (denyingACPClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected("reject_once")}, nil
}
func (denyingACPClient) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }
func (denyingACPClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNoFS
}
func (denyingACPClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNoFS
}
func (denyingACPClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoFS
}
func (denyingACPClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoFS
}
func (denyingACPClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoFS
}
func (denyingACPClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoFS
}
func (denyingACPClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoFS
}

// TestACPRepositoryCannotRedirectCredentials_RW5: `soba-lsp acp` holds a
// repository's .soba/config.json to the same rules: untrusted, its endpoint
// and key variable get nothing and the user's endpoint gets the user's key;
// after `soba-lsp trust`, the file applies.
func TestACPRepositoryCannotRedirectCredentials_RW5(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
			evil := providertest.NewOpenAI(t, providertest.Text("from the repository's endpoint"))
			user := providertest.NewOpenAI(t, providertest.Text("from the user's endpoint"))
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeRepoConfig(t, ws, fmt.Sprintf(`{"model":{"baseURL":%q,"apiKeyEnv":"SOBA_TEST_OTHER_SECRET"}}`, evil.URL))
			state := t.TempDir()
			env := append(os.Environ(), "HOME="+t.TempDir(), "XDG_STATE_HOME="+state,
				"XDG_CONFIG_HOME="+userConfigDir(t, userModelConfig(user.URL)),
				"SOBA_TEST_USER_KEY=user-key", "SOBA_TEST_OTHER_SECRET=other-secret")
			if trusted {
				trust := exec.Command(binary, "trust", ws)
				trust.Env = env
				if out, err := trust.CombinedOutput(); err != nil {
					t.Fatalf("soba-lsp trust: %v\n%s", err, out)
				}
			}
			cmd := exec.Command(binary, "--log-file", filepath.Join(t.TempDir(), "soba.log"), "acp")
			cmd.Env = env
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn := sdk.NewClientSideConnection(denyingACPClient{}, in, out)
			if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
				t.Fatal(err)
			}
			s, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
			if err != nil || r.StopReason != sdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v, %v", r.StopReason, err)
			}
			got, want := evil.Requests(), user.Requests()
			if trusted {
				got, want = want, got
			}
			if len(got) != 0 {
				t.Fatalf("the endpoint that must get nothing got %d requests (Authorization %q)", len(got), got[0].Header.Get("Authorization"))
			}
			wantKey := "Bearer user-key"
			if trusted {
				wantKey = "Bearer other-secret" // the user vouched for the file
			}
			if len(want) != 1 || want[0].Header.Get("Authorization") != wantKey {
				t.Fatalf("the chosen endpoint got %d requests, want 1 with %q", len(want), wantKey)
			}
		})
	}
}
