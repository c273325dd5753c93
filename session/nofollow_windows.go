//go:build windows

package session

// oNoFollow is 0 on Windows, which has no O_NOFOLLOW: creating a link there
// needs a privilege a repository does not grant, and the files are created
// with O_EXCL.
const oNoFollow = 0
