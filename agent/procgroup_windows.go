//go:build windows

package agent

import "os/exec"

// inProcessGroup makes cmd's cancel kill its process. Windows has no
// process group to signal, so children the command started may outlive it;
// the editor's terminal (ACP) is the way to run bash there with a stop.
func inProcessGroup(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
