package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gofrs/flock"
)

// The trust store (SPEC R-W5): `soba-lsp trust DIR` records the SHA-256 of
// DIR/.soba/config.json in the user's state directory, like `direnv allow`.
// A workspace file whose content hashes to the recorded sum is trusted: it
// applies in full. Any change to the file makes it untrusted again until the
// user trusts it again, so a `git pull` cannot slip a new endpoint in under
// an old trust.

// maxTrustStoreBytes bounds the trust store read (one line per trusted
// workspace; a million of them is far beyond use).
const maxTrustStoreBytes = 64 << 20

// TrustStoreFile returns $XDG_STATE_HOME/soba/trust.json, or
// $HOME/.local/state/soba/trust.json when XDG_STATE_HOME is unset or not
// absolute (as the XDG spec says). getenv is os.Getenv outside tests.
func TrustStoreFile(getenv func(string) string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "soba", "trust.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("trust: neither XDG_STATE_HOME nor HOME is set; no trust store")
	}
	return filepath.Join(home, ".local", "state", "soba", "trust.json"), nil
}

// TrustEntry is one trusted configuration file.
type TrustEntry struct {
	// File is the configuration file's absolute path, its directory's
	// links resolved.
	File      string    `json:"-"`
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trustedAt"`
}

type trustStore struct {
	Version int                   `json:"version"`
	Files   map[string]TrustEntry `json:"files"`
}

// trustKey is the name a configuration file is recorded under: its
// absolute path with the links of its directory resolved, so the same
// file opened through another path is the same entry.
func trustKey(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// SumConfig is the hex SHA-256 of a configuration file's content.
func SumConfig(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func readTrustStore(store string) (trustStore, error) {
	st := trustStore{Version: 1, Files: map[string]TrustEntry{}}
	data, err := ReadRegularFile(store, maxTrustStoreBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("trust store %s: %w", store, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return trustStore{Version: 1, Files: map[string]TrustEntry{}}, fmt.Errorf("trust store %s: %w", store, err)
	}
	if st.Files == nil {
		st.Files = map[string]TrustEntry{}
	}
	return st, nil
}

// IsTrustedConfig reports whether the trust store records the
// configuration file with exactly this content. A store that cannot be read
// trusts nothing.
func IsTrustedConfig(store, file string, data []byte) bool {
	if store == "" {
		return false
	}
	key, err := trustKey(file)
	if err != nil {
		return false
	}
	st, err := readTrustStore(store)
	if err != nil {
		return false
	}
	e, ok := st.Files[key]
	return ok && e.SHA256 == SumConfig(data)
}

// updateTrustStore changes the store under its lock and writes it whole
// (a temporary file renamed over it), so two `soba-lsp trust` at once lose
// no entry and a reader never sees half a file.
func updateTrustStore(store string, change func(*trustStore) error) error {
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return err
	}
	lock := flock.New(store + ".lock")
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("trust store %s: lock: %w", store, err)
	}
	defer lock.Unlock()
	st, err := readTrustStore(store)
	if err != nil {
		return err
	}
	if err := change(&st); err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(store), ".trust-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), store); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// TrustConfig records the configuration file with its current content
// (read as the loader reads it: through the workspace's door when root is
// set, bounded, regular files only) and returns the entry.
func TrustConfig(store, root, file string, now time.Time) (TrustEntry, error) {
	data, err := readConfigLayer(root, file)
	if err != nil {
		return TrustEntry{}, err
	}
	key, err := trustKey(file)
	if err != nil {
		return TrustEntry{}, err
	}
	e := TrustEntry{File: key, SHA256: SumConfig(data), TrustedAt: now.UTC()}
	err = updateTrustStore(store, func(st *trustStore) error {
		st.Files[key] = e
		return nil
	})
	return e, err
}

// RevokeConfig removes the file's entry; it reports whether there was one.
func RevokeConfig(store, file string) (bool, error) {
	key, err := trustKey(file)
	if err != nil {
		// A file whose directory is gone can still be revoked by its
		// absolute path.
		if key, err = filepath.Abs(file); err != nil {
			return false, err
		}
	}
	found := false
	err = updateTrustStore(store, func(st *trustStore) error {
		_, found = st.Files[key]
		delete(st.Files, key)
		return nil
	})
	return found, err
}

// ListTrusted returns the store's entries, sorted by file.
func ListTrusted(store string) ([]TrustEntry, error) {
	st, err := readTrustStore(store)
	if err != nil {
		return nil, err
	}
	var out []TrustEntry
	for _, k := range slices.Sorted(maps.Keys(st.Files)) {
		e := st.Files[k]
		e.File = k
		out = append(out, e)
	}
	return out, nil
}
