package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/soba-agent/soba-lsp/session"
)

// Write stores res as a new session file at path (which must end in
// .jsonl; its base name is the session id) through the session store, so
// the file is exactly what the server writes and resumes. Entries go out
// without an fsync each (session.SyncNever); the file and its directory are
// synced once at the end. It fails, writing nothing, if path exists.
// header.SessionID is set from path; header.ImportedFrom should name the
// source.
func Write(res *Result, path string, header session.SessionHeader, opts session.Options) (err error) {
	name := filepath.Base(path)
	if !strings.HasSuffix(name, ".jsonl") || name == ".jsonl" {
		return fmt.Errorf("output %s: a session file name must end in .jsonl", path)
	}
	dir := filepath.Dir(path)
	header.SessionID = strings.TrimSuffix(name, ".jsonl")
	opts.Sync = session.SyncNever
	s, err := session.Create(dir, header, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(s.FilePath()) // never leave half an import behind
		}
	}()
	root := s.Leaf() // the header entry
	for i := range res.Entries {
		e := res.Entries[i]
		if e.ParentID == nil {
			p := root
			e.ParentID = &p
		}
		if _, err := s.Append(e); err != nil {
			return fmt.Errorf("write entry %d of %d: %w", i+1, len(res.Entries), err)
		}
	}
	if res.Leaf != "" && s.Leaf() != res.Leaf {
		// The session continues from an entry that is not the file's last
		// (a tree whose active branch ended earlier): a rewind entry makes
		// it the leaf, as the server records a rewind (R-T4).
		if _, err := s.Rewind(res.Leaf); err != nil {
			return fmt.Errorf("set the leaf: %w", err)
		}
	}
	return syncFile(s.FilePath())
}

// syncFile forces the file and its directory entry to stable storage: the
// one sync of a bulk import.
func syncFile(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", p, err)
		}
	}
	return nil
}
