//go:build windows

package workspace

import (
	"os"
	"syscall"
)

// dirOpenFlags open a directory of a walk. Windows has no O_DIRECTORY (nor
// FIFOs to swap in); the walk still checks what it opened.
const dirOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK
