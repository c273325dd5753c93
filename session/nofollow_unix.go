//go:build !windows

package session

import "syscall"

// oNoFollow makes an open fail on a symbolic link: a session file or an
// index is never reached through a link.
const oNoFollow = syscall.O_NOFOLLOW
