package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// DeletedDir is the folder of a session directory that Delete moves
// sessions into: List does not look inside it, and moving a file back
// restores its session.
const DeletedDir = "deleted"

// Delete takes session id out of dir's list: its file and index move into
// dir/deleted/ (a name already there gets a time suffix), nothing is
// removed. found is false when dir has no such session. A session open in
// a Store (any process) is refused: its lock is held.
func Delete(dir, id string) (found bool, err error) {
	path := filepath.Join(dir, id+".jsonl")
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("session: delete: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return true, fmt.Errorf("session: delete: %s is not a regular file", path)
	}
	lock := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := lock.TryLock()
	if err != nil {
		return true, fmt.Errorf("session: delete: lock %s: %w", path, err)
	}
	if !ok {
		return true, fmt.Errorf("session %s is open in another SOBA process: close it there first", id)
	}
	defer lock.Unlock()
	trash := filepath.Join(dir, DeletedDir)
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return true, fmt.Errorf("session: delete: %w", err)
	}
	target := filepath.Join(trash, id+".jsonl")
	if _, err := os.Lstat(target); err == nil {
		target = filepath.Join(trash, id+"."+time.Now().UTC().Format("20060102T150405.000000000")+".jsonl")
	}
	if err := os.Rename(path, target); err != nil {
		return true, fmt.Errorf("session: delete: %w", err)
	}
	if err := os.Rename(path+IndexFileSuffix, target+IndexFileSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// The index is a cache: a stale one beside a moved file is rebuilt.
		_ = os.Remove(path + IndexFileSuffix)
	}
	return true, nil
}
