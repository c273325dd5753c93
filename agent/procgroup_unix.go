//go:build !windows

package agent

import (
	"os/exec"
	"syscall"
)

// inProcessGroup runs cmd in a process group of its own and makes its
// cancel kill the whole group, so a command's children end with it.
func inProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
