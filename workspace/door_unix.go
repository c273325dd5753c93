//go:build !windows

package workspace

import (
	"os"
	"syscall"
)

// dirOpenFlags open a directory of a walk: never blocking, and only a
// directory (door.go).
const dirOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_DIRECTORY
