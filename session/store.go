package session

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/soba-agent/soba-lsp/internal/id"
	"github.com/soba-agent/soba-lsp/internal/jsondec"
)

// File format notes (beyond SPEC §1):
//
//   - Each line is one Entry encoded by encoding/json; the header fields id,
//     parentId, type, timestamp and tokens come first, so resume indexes a line
//     from its first bytes (scanHeader) and decodes payloads only on Load.
//   - A line that does not end with "\n" is a torn tail (R-T5): Open reports it
//     and ignores it. The next Append first writes tornMark and "\n" after those
//     bytes, so the new entry starts on a fresh line and the torn bytes become
//     one junk line that can never parse as an entry. Later Opens report it as
//     a bad line.
//   - A parent precedes its child in the file (append-only guarantees it); an
//     entry whose parent is not found before it is kept as a root and reported.

// tornMark ends a torn line when the next append heals it. It holds no quote,
// brace or bracket, so a prefix of a JSON object followed by it is never valid
// JSON, and it does not end in '}', so the fast header scanner rejects it.
const tornMark = " #torn"

// Defaults of Options.
const (
	DefaultCacheEntries = 1024
	DefaultCacheBytes   = 8 << 20
)

// ErrInUse is returned (wrapped, with the path) by Create and Open when
// another Store, in this process or another, holds the session file (R-T5).
var ErrInUse = errors.New("in use by another process")

// ErrReadOnly is returned (wrapped) by Append on a store opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("the session was opened read-only")

// ErrClosed is returned by methods of a closed Store.
var ErrClosed = errors.New("session: store is closed")

// SyncPolicy says when appended entries are forced to stable storage.
type SyncPolicy int

const (
	// SyncEveryAppend fsyncs the file before Append returns, so an entry that
	// was reported done is on disk even after a power cut (R-T5). It is the
	// default; docs/benchmarks.md shows its cost.
	SyncEveryAppend SyncPolicy = iota
	// SyncNever leaves flushing to the operating system: entries survive a
	// crash of this process but not of the machine. For imports and tests.
	SyncNever
)

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// Estimate, when set, gives the token estimate written into Entry.Tokens
	// at append when the caller left Tokens at 0.
	Estimate func(*Entry) int
	// Now is the clock for entry timestamps (default time.Now).
	Now func() time.Time
	// Sync is the durability policy (default SyncEveryAppend).
	Sync SyncPolicy
	// CacheEntries and CacheBytes bound the cache of recent lines used by Load
	// (defaults DefaultCacheEntries and DefaultCacheBytes; negative disables).
	CacheEntries, CacheBytes int
	// FullScan makes resume read every line of the transcript even when a
	// valid index file would spare it (verify).
	FullScan bool
}

// Meta is the header of one entry, kept in memory for every entry of the
// session; payloads stay on disk until Load.
type Meta struct {
	ID     string
	Type   string
	Offset int64 // byte offset of the line in the file
	// Facts are the payload fields resume needs (settings, intents,
	// activated skills), nil for most entries.
	Facts *Facts
	// ts and tz are what Timestamp returns (setTimestamp): the index holds
	// one Meta per entry, and a time.Time would make each a fifth larger.
	ts     int64
	Len    int32 // line length without the newline
	Tokens int32
	Depth  int32 // 0 for a root; the entry's index on its root→leaf path
	Line   int32 // 1-based line number in the file, for reports
	tz     int32
	// MayHaveUsage is false when the entry certainly carries no provider
	// usage, so a reader looking for the newest usage need not decode it.
	MayHaveUsage bool
}

// Timestamp is the entry's timestamp, in the zone it was written with (a
// fixed offset: zone names are not kept).
func (m *Meta) Timestamp() time.Time {
	switch m.tz {
	case tzNone:
		return time.Time{}
	case tzUTC:
		return time.Unix(0, m.ts).UTC()
	}
	return time.Unix(0, m.ts).In(time.FixedZone("", int(m.tz)))
}

// setTimestamp sets what Timestamp returns.
func (m *Meta) setTimestamp(t time.Time) {
	switch {
	case t.IsZero():
		m.ts, m.tz = 0, tzNone
	case t.Location() == time.UTC:
		m.ts, m.tz = t.UnixNano(), tzUTC
	default:
		_, off := t.Zone()
		m.ts, m.tz = t.UnixNano(), int32(off)
	}
}

// MaxEntryBytes is the longest line an entry may have (Meta.Len is 32 bits):
// a longer line is refused by Append and reported as a bad line by resume,
// never indexed, so no reader is asked to hold it.
const MaxEntryBytes = math.MaxInt32

// clamp32 is n in 32 bits, saturating: a token estimate or line number past
// 2^31 (a hostile file) reads as the largest, never as a negative.
func clamp32(n int) int32 { return int32(min(max(n, math.MinInt32), math.MaxInt32)) }

// Meta.tz values beside a zone's offset east of UTC in seconds (at most a
// day either way).
const (
	tzUTC  = math.MinInt32
	tzNone = math.MinInt32 + 1
)

// Store is an open session file: the index of every entry, the current leaf
// and its path, and the file held under an exclusive advisory lock.
//
// A Store is meant to be driven by the one goroutine that owns the session
// (DESIGN.md "Concurrency"); all methods are nevertheless safe for
// concurrent use, and Load in particular may be called from any goroutine
// while the owner appends.
type Store struct {
	path string
	opt  Options
	lock *flock.Flock

	// mu guards every field below, the file offset bookkeeping and the cache.
	// ReadAt in Load runs outside it (pread needs no lock).
	mu      sync.Mutex
	f       *os.File
	closed  bool
	broken  error // a failed fsync: durability is unknown, appends refuse
	size    int64 // bytes in the file
	heal    bool  // the file ends in a torn line: the next write ends it first
	metas   []Meta
	parents []int32 // parents[i] is the index of metas[i]'s parent, -1 for a root
	// index maps ids to metas; nil after a resume from the index file until
	// a lookup needs it (ids, find).
	index    map[string]int32
	leafPath []Meta // leaf path, root first; see Path for the sharing rule
	cache    *lineCache
	enc      bytes.Buffer
	header   *SessionHeader
	lines    int // complete lines in the file (torn tail excluded)
	// readOnly marks a store opened by OpenReadOnly: no lock, no appends.
	readOnly bool
	// undecodable are entries whose payload failed to decode, reported once
	// (LoadLenient) to onUndecodable.
	undecodable   map[string]bool
	onUndecodable func(BadLine)
	// cleanIndex says every line of the file is an entry of a known type,
	// so the index file may be written; indexFileValid says the index file
	// on disk is that of the file as it is (indexfile.go).
	cleanIndex, indexFileValid bool
	// marked are the entries that are capsules or carry facts, in index
	// order (Marked).
	marked []int32
	// dangling are the parent ids of resumed entries whose parent is not
	// in the file (parentAt).
	dangling map[int32]string
	// onLinked (VerifyFile, through openReadOnly) makes resume check every
	// entry's line where the scan reads it and hand the findings over as
	// the entry is linked, in file order (one read of the file for both).
	onLinked func(s *Store, i int32, c *lineCheck)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Create makes dir if needed and writes a new session file
// <dir>/<sessionId>.jsonl holding the session header entry. It fails if the
// file exists.
func Create(dir string, header SessionHeader, opts Options) (*Store, error) {
	if err := checkSessionID(header.SessionID); err != nil {
		return nil, err
	}
	if header.Version == 0 {
		header.Version = 1
	}
	// Transcripts hold source code and command output: keep them private.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	path := filepath.Join(dir, header.SessionID+".jsonl")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	s := newStore(path, f, opts)
	if err := s.acquire(); err != nil {
		f.Close()
		return nil, err
	}
	s.cleanIndex = true
	if opts.Sync == SyncEveryAppend {
		// The new name must survive a power cut too, not only its contents.
		if err := syncDir(dir); err != nil {
			s.Close()
			os.Remove(path)
			return nil, err
		}
	}
	h := header
	if _, err := s.Append(Entry{Type: TypeSession, Session: &h}); err != nil {
		s.Close()
		os.Remove(path)
		return nil, err
	}
	return s, nil
}

func checkSessionID(id string) error {
	switch {
	case id == "":
		return errors.New("session: create: header has no sessionId")
	case id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00"):
		return fmt.Errorf("session: create: sessionId %q is not a file name", id)
	}
	return nil
}

// Open resumes the session file at path (R-T4): it takes the lock, indexes
// every complete entry from its header fields without keeping payloads, and
// sets the leaf to the last complete entry. Damage that does not prevent
// resuming (a torn last line, bad lines, unknown types, missing parents) is
// listed in the report, never fatal (R-T3, R-T5). The report is also
// returned, as far as it got, with an error.
func Open(path string, opts Options) (*Store, *OpenReport, error) {
	f, err := openFile(path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return nil, nil, fmt.Errorf("session: %w", err)
	}
	s := newStore(path, f, opts)
	if err := s.acquire(); err != nil {
		f.Close()
		return nil, nil, err
	}
	rep, err := s.resume(f)
	if err != nil {
		s.Close()
		return nil, rep, err
	}
	return s, rep, nil
}

// OpenReadOnly indexes the session file at path exactly as Open does (the
// same scan, the same report) without taking the lock or ever writing: the
// offline commands read a session this way, so they work on a session a
// running server holds, and their figures come from the same index as the
// server's. A line the owner appends meanwhile may show as a torn tail.
func OpenReadOnly(path string, opts Options) (*Store, *OpenReport, error) {
	return openReadOnly(path, opts, nil)
}

// openReadOnly is OpenReadOnly with resume handing each entry's line check
// to onLinked (VerifyFile), when it is not nil.
func openReadOnly(path string, opts Options, onLinked func(s *Store, i int32, c *lineCheck)) (*Store, *OpenReport, error) {
	f, err := openFile(path, os.O_RDONLY)
	if err != nil {
		return nil, nil, fmt.Errorf("session: %w", err)
	}
	s := newStore(path, f, opts)
	s.readOnly = true
	s.onLinked = onLinked
	rep, err := s.resume(f)
	if err != nil {
		s.Close()
		return nil, rep, err
	}
	return s, rep, nil
}

func newStore(path string, f *os.File, opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CacheEntries == 0 {
		opts.CacheEntries = DefaultCacheEntries
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	return &Store{path: path, opt: opts, f: f, index: map[string]int32{},
		cache: newLineCache(opts.CacheEntries, opts.CacheBytes)}
}

// acquire takes the exclusive advisory lock without waiting. The lock is held
// on its own descriptor (gofrs/flock), so it conflicts with any other Store on
// the file, in this process or another.
func (s *Store) acquire() error {
	s.lock = flock.New(s.path, flock.SetFlag(os.O_RDONLY))
	ok, err := s.lock.TryLock()
	if err != nil {
		return fmt.Errorf("session %s: lock: %w", s.path, err)
	}
	if !ok {
		return fmt.Errorf("session %s is %w", s.path, ErrInUse)
	}
	return nil
}

// FilePath returns the path of the session file.
func (s *Store) FilePath() string { return s.path }

// Header returns the session header entry's payload, when the file starts
// with one.
func (s *Store) Header() (SessionHeader, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.header == nil {
		return SessionHeader{}, false
	}
	return *s.header, true
}

// Len returns the number of entries in the session (every branch).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.metas)
}

// Leaf returns the id of the entry the next append hangs from ("" for an
// empty file).
func (s *Store) Leaf() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.leafPath) == 0 {
		return ""
	}
	return s.leafPath[len(s.leafPath)-1].ID
}

// Path returns the leaf path, root first (R-T2). It costs O(1): the slice is
// an immutable snapshot that shares memory with the store, so the caller must
// not modify its elements (appending to it is safe: its capacity is clipped).
// The store only ever writes past the end of earlier snapshots, and a rewind
// builds a new array, so a snapshot stays valid after later appends.
func (s *Store) Path() []Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leafPath[:len(s.leafPath):len(s.leafPath)]
}

// All returns every entry's header in file order, under the same sharing
// rule as Path.
func (s *Store) All() []Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metas[:len(s.metas):len(s.metas)]
}

// Meta returns the header of entry id.
func (s *Store) Meta(id string) (Meta, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.find(id)
	if !ok {
		return Meta{}, false
	}
	return s.metas[i], true
}

// LatestOnPath returns the newest entry on the leaf path whose type is one of
// types, for example the capsule that resume restores (R-T4).
func (s *Store) LatestOnPath(types ...string) (Meta, bool) {
	p := s.Path()
	if i := FindLatest(p, types...); i >= 0 {
		return p[i], true
	}
	return Meta{}, false
}

// FindLatest returns the index of the last element of metas whose type is one
// of types, or -1.
func FindLatest(metas []Meta, types ...string) int {
	for i := len(metas) - 1; i >= 0; i-- {
		for _, t := range types {
			if metas[i].Type == t {
				return i
			}
		}
	}
	return -1
}

// Append writes e as one line hanging from the leaf, or from e.ParentID when
// the caller set it (Rewind does), and makes it the new leaf. It fills ID (a
// fresh 8-hex-digit id unless set), ParentID, Timestamp (unless set), and
// Tokens (through Options.Estimate when 0). The line goes to the file in one
// write and, under SyncEveryAppend, is fsynced before Append returns (R-T5).
// The returned entry is e as written.
func (s *Store) Append(e Entry) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return e, ErrClosed
	}
	if s.readOnly {
		return e, fmt.Errorf("session %s: append: %w", s.path, ErrReadOnly)
	}
	if s.broken != nil {
		return e, fmt.Errorf("session %s: an earlier sync failed, so no more entries are written: %w", s.path, s.broken)
	}
	if err := checkPayload(&e); err != nil {
		return e, err
	}
	parent := int32(-1)
	if e.ParentID != nil {
		i, ok := s.find(*e.ParentID)
		if !ok {
			return e, fmt.Errorf("session: append: parent entry %q is not in the session", *e.ParentID)
		}
		parent = i
	} else if n := len(s.leafPath); n > 0 {
		p := s.leafPath[n-1].ID
		e.ParentID = &p
		parent, _ = s.find(p)
	}
	if e.ID == "" {
		e.ID = s.newID()
	} else if _, dup := s.ids()[e.ID]; dup {
		return e, fmt.Errorf("session: append: entry id %q is already in the session", e.ID)
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = s.opt.Now().UTC()
	}
	if e.Tokens == 0 && s.opt.Estimate != nil {
		e.Tokens = s.opt.Estimate(&e)
	}
	e.Raw = nil

	s.enc.Reset()
	if s.heal {
		s.enc.WriteString(tornMark + "\n")
	}
	lead := s.enc.Len()
	enc := json.NewEncoder(&s.enc)
	enc.SetEscapeHTML(false) // code and shell output stay readable in the file
	if err := enc.Encode(&e); err != nil {
		return e, fmt.Errorf("session: append %s entry: %w", e.Type, err)
	}
	buf := s.enc.Bytes()
	lineLen := len(buf) - lead - 1 // Encode ends the line with "\n"
	if lineLen > MaxEntryBytes {
		s.enc.Truncate(lead)
		return e, fmt.Errorf("session: append %s entry: %d bytes, over the %d an entry may have", e.Type, lineLen, MaxEntryBytes)
	}

	// Work out the new path before writing, so a failed write changes nothing.
	newPath := s.pathThrough(parent)

	n, err := s.f.Write(buf)
	if err != nil {
		s.cleanIndex = false // a partial line: the file is no longer all entries
		s.size += int64(n)
		if n > 0 {
			s.heal = true
		}
		return e, fmt.Errorf("session %s: append: %w", s.path, err)
	}
	if s.opt.Sync == SyncEveryAppend {
		if err := s.f.Sync(); err != nil {
			// The bytes may or may not be on disk; after a failed fsync the
			// kernel may even have dropped them. Stop here rather than build
			// on an entry whose fate is unknown.
			s.broken = err
			return e, fmt.Errorf("session %s: sync: %w", s.path, err)
		}
	}
	m := Meta{ID: e.ID, Type: internType(e.Type), Offset: s.size + int64(lead),
		Len: int32(lineLen), Tokens: clamp32(e.Tokens), Line: clamp32(s.lines + 1 + btoi(s.heal)),
		Facts: FactsOf(&e), MayHaveUsage: HasUsage(&e)}
	m.setTimestamp(e.Timestamp)
	s.lines = int(m.Line)
	s.size += int64(n)
	s.heal = false
	if parent >= 0 {
		m.Depth = s.metas[parent].Depth + 1
	}
	if s.linear(parent) {
		// The session is one line of entries and the path is the index
		// itself: extend both at once instead of keeping a copy.
		s.add(m, parent)
		s.leafPath = s.metas[:len(s.metas):len(s.metas)]
	} else {
		s.add(m, parent)
		s.leafPath = append(newPath, m)
	}
	s.cache.put(e.ID, bytes.Clone(buf[lead:lead+lineLen]))
	if e.Type == TypeSession && len(s.metas) == 1 {
		h := *e.Session
		s.header = &h
	}
	return e, nil
}

// Rewind moves the leaf to entry id (R-T4) by appending a settings entry
// {rewindTo: id} that hangs from id: the new entry is the leaf, so the rewind
// survives resume, and the abandoned branch stays on disk (R-T1). It returns
// the settings entry.
func (s *Store) Rewind(id string) (Entry, error) {
	if _, ok := s.Meta(id); !ok {
		return Entry{}, fmt.Errorf("session: rewind: entry %q is not in the session", id)
	}
	p := id
	return s.Append(Entry{Type: TypeSettings, ParentID: &p, Settings: &Settings{RewindTo: id}})
}

// Load reads and decodes entry id from the file (or from the cache of recent
// lines). An entry of a type this version does not know comes back with its
// header fields set and Raw holding the line (R-T3). Load is safe to call
// from any goroutine.
func (s *Store) Load(id string) (Entry, error) {
	m, err := s.lookup(id)
	if err != nil {
		return Entry{}, err
	}
	return s.load(m)
}

// lookup returns the header of entry id.
func (s *Store) lookup(id string) (Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Meta{}, ErrClosed
	}
	i, ok := s.find(id)
	if !ok {
		return Meta{}, fmt.Errorf("session: load: entry %q is not in the session", id)
	}
	return s.metas[i], nil
}

// LoadMeta is Load for the entry m, a header from this store's index (Path,
// LeafPath, Meta): it is read where m says, without looking its id up, so a
// reader that walks a path snapshot never makes the store build its id map.
func (s *Store) LoadMeta(m Meta) (Entry, error) { return s.load(m) }

// load reads and decodes the entry m indexes, through the cache.
func (s *Store) load(m Meta) (Entry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Entry{}, ErrClosed
	}
	line, hit := s.cache.get(m.ID)
	f := s.f
	s.mu.Unlock()

	if !hit {
		line = make([]byte, m.Len)
		if _, err := f.ReadAt(line, m.Offset); err != nil {
			return Entry{}, fmt.Errorf("session %s: load entry %q at offset %d: %w", s.path, m.ID, m.Offset, err)
		}
		s.mu.Lock()
		s.cache.put(m.ID, line)
		s.mu.Unlock()
	}
	e, err := DecodeLine(line)
	if err != nil {
		return Entry{}, &DecodeError{Path: s.path, ID: m.ID, Offset: m.Offset, Err: err}
	}
	return e, nil
}

// LoadLenient is Load for readers that must go on past a poisoned entry
// (R-T3): an entry whose header indexed but whose payload does not decode
// (a line such as "user":{"text":123}) comes back with its header fields
// only, so every reader skips it as it skips an unknown type, and bad
// describes it, naming its line, the first time only (nil after). err is
// for a failure to read the file or a closed store.
func (s *Store) LoadLenient(id string) (e Entry, bad *BadLine, err error) {
	m, err := s.lookup(id)
	if err != nil {
		return Entry{}, nil, err
	}
	return s.LoadLenientMeta(m)
}

// LoadLenientMeta is LoadLenient for the entry m, a header from this store's
// index, read as LoadMeta reads it.
func (s *Store) LoadLenientMeta(m Meta) (e Entry, bad *BadLine, err error) {
	e, err = s.load(m)
	if err == nil || errors.Is(err, ErrClosed) {
		return e, nil, err
	}
	var de *DecodeError
	if !errors.As(err, &de) {
		return Entry{}, nil, err
	}
	s.mu.Lock()
	first := !s.undecodable[m.ID]
	if first {
		if s.undecodable == nil {
			s.undecodable = map[string]bool{}
		}
		s.undecodable[m.ID] = true
	}
	hook := s.onUndecodable
	s.mu.Unlock()
	e = s.headerOnly(m)
	if first {
		bad = &BadLine{Line: int(m.Line), Offset: m.Offset, Err: fmt.Errorf("entry %q cannot be decoded: %v", m.ID, de.Err)}
		if hook != nil {
			hook(*bad)
		}
	}
	return e, bad, nil
}

// OnUndecodable sets the function LoadLenient reports a newly found
// undecodable entry to (from the goroutine that loaded it).
func (s *Store) OnUndecodable(f func(BadLine)) {
	s.mu.Lock()
	s.onUndecodable = f
	s.mu.Unlock()
}

// MarkUndecodable records that entry id's payload is known not to decode
// (found by another reader), so LoadLenient does not report it again.
func (s *Store) MarkUndecodable(id string) {
	s.mu.Lock()
	if s.undecodable == nil {
		s.undecodable = map[string]bool{}
	}
	s.undecodable[id] = true
	s.mu.Unlock()
}

// headerOnly is the entry of m without a payload: what readers see of an
// entry whose payload does not decode.
func (s *Store) headerOnly(m Meta) Entry {
	e := Entry{ID: m.ID, Type: m.Type, Timestamp: m.Timestamp(), Tokens: int(m.Tokens)}
	if p := s.parentOf(m); p != "" {
		e.ParentID = &p
	}
	return e
}

// parentOf returns the id of the parent of m, an entry of this store's
// index ("" for a root). The index keeps parents as positions, not ids:
// an id in every entry made it a fifth larger.
func (s *Store) parentOf(m Meta) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The index is in file order: by offset.
	i, ok := slices.BinarySearchFunc(s.metas, m.Offset, func(x Meta, off int64) int { return cmp.Compare(x.Offset, off) })
	if !ok || s.metas[i].ID != m.ID {
		return ""
	}
	return s.parentAt(int32(i))
}

// parentAt returns the id of the parent of entry i: the entry its parents
// slot names, or the id a resumed line named that is not in the file
// (dangling). The caller holds s.mu.
func (s *Store) parentAt(i int32) string {
	if p := s.parents[i]; p >= 0 {
		return s.metas[p].ID
	}
	return s.dangling[i]
}

// DecodeError is Load's error for a line that was read but does not decode
// as an entry.
type DecodeError struct {
	Path, ID string
	Offset   int64
	Err      error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("session %s: entry %q at offset %d: %v", e.Path, e.ID, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeLine decodes one transcript line. An entry of an unknown type keeps
// its header fields and gets a copy of the line in Raw (R-T3).
func DecodeLine(line []byte) (Entry, error) { return decodeLine(line, false) }

// DecodeLineLean is DecodeLine leaving out what leanOmits describes. A line it
// cannot decode so is decoded in full: lean is a saving, never a
// different answer about whether the line decodes.
func DecodeLineLean(line []byte) (Entry, error) { return decodeLine(line, true) }

func decodeLine(line []byte, lean bool) (Entry, error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if e, ok := quickDecode(line, lean); ok {
		return e, nil
	}
	return decodeLineFull(line)
}

// leanOmits reports whether lean decoding leaves r's content out. Lean
// decoding leaves out the content of a tool result that succeeded,
// recorded its artifacts and ran no command: the text of a file read, a
// listing, a search's matches. Such a result's artifacts say what it did,
// and its content is most of a long session's bytes; the capsule's
// deterministic builder, which reads every entry of the range it
// summarises, never reads it (compaction.LeanTranscript). The result comes
// back with ContentOmitted set and Content "". Every other field, and
// every other entry, is decoded as DecodeLine decodes it.
func leanOmits(r *ToolResult) bool {
	return r.OK && r.Artifacts != nil && r.Artifacts.Command == ""
}

// decodeLineFull is DecodeLine by the JSON decoder alone: any layout, and
// the error that names what is wrong.
func decodeLineFull(line []byte) (Entry, error) {
	var e Entry
	if err := jsondec.Unmarshal(line, &e); err != nil {
		return Entry{}, err
	}
	if !KnownType(e.Type) {
		e.Raw = bytes.Clone(line)
	}
	return e, nil
}

// KnownType reports whether t is an entry type this version writes.
func KnownType(t string) bool { return knownTypes[t] }

var knownTypes = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range entryTypeCodes {
		m[t] = true
	}
	return m
}()

// internType returns the shared constant for a known type, so that 100k
// metas do not hold 100k copies of "assistant"; other types are copied.
func internType(t string) string {
	switch t {
	case TypeSession:
		return TypeSession
	case TypeUser:
		return TypeUser
	case TypeAssistant:
		return TypeAssistant
	case TypeToolResult:
		return TypeToolResult
	case TypeCapsule:
		return TypeCapsule
	case TypeCheckpoint:
		return TypeCheckpoint
	case TypeCapsuleLoad:
		return TypeCapsuleLoad
	case TypeSettings:
		return TypeSettings
	}
	return strings.Clone(t)
}

// checkPayload makes sure an entry to be written has a known type and exactly
// the payload its type names: the file must not hold entries that readers
// cannot interpret.
func checkPayload(e *Entry) error {
	if !knownTypes[e.Type] {
		return fmt.Errorf("session: append: unknown entry type %q", e.Type)
	}
	if !hasPayload(e, e.Type) {
		return fmt.Errorf("session: append %s entry: its %s payload is missing", e.Type, e.Type)
	}
	for _, t := range entryTypeCodes {
		if t != e.Type && hasPayload(e, t) {
			return fmt.Errorf("session: append %s entry: it also carries a %s payload", e.Type, t)
		}
	}
	return nil
}

// hasPayload reports whether e carries the payload of entry type typ.
func hasPayload(e *Entry, typ string) bool {
	switch typ {
	case TypeSession:
		return e.Session != nil
	case TypeUser:
		return e.User != nil
	case TypeAssistant:
		return e.Assistant != nil
	case TypeToolResult:
		return e.ToolResult != nil
	case TypeCapsule:
		return e.Capsule != nil
	case TypeCheckpoint:
		return e.Checkpoint != nil
	case TypeCapsuleLoad:
		return e.CapsuleLoad != nil
	case TypeSettings:
		return e.Settings != nil
	}
	return false
}

// newID returns a random entry id not yet used in the session.
func (s *Store) newID() string {
	ids := s.ids()
	return id.Entry(func(e string) bool { _, dup := ids[e]; return dup })
}

// ids is the map from entry ids to metas, built from the index when a
// resume from the index file left it out. The caller holds s.mu.
func (s *Store) ids() map[string]int32 {
	if s.index == nil {
		s.index = make(map[string]int32, len(s.metas)+64)
		for i, m := range s.metas {
			s.index[m.ID] = int32(i) // a clean file has no duplicate ids
		}
	}
	return s.index
}

// findRecent bounds how far find looks back through the newest entries
// before it builds the map.
const findRecent = 512

// find returns the position of entry id. Without the map (after a resume
// from the index file) it looks at the newest entries and the first, which
// are what resume, the budget and the model input after a capsule load,
// and builds the map only for an older one. The caller holds s.mu.
func (s *Store) find(id string) (int32, bool) {
	if s.index == nil {
		for i := len(s.metas) - 1; i >= 0 && i >= len(s.metas)-findRecent; i-- {
			if s.metas[i].ID == id {
				return int32(i), true
			}
		}
		if len(s.metas) > 0 && s.metas[0].ID == id {
			return 0, true
		}
	}
	i, ok := s.ids()[id]
	return i, ok
}

// linear reports whether the leaf path is the whole index, shared with it,
// and parent is its last entry: then a child extends both alike. Snapshots
// of the path have their capacity clipped, so appending to the index never
// changes what they hold.
func (s *Store) linear(parent int32) bool {
	n := len(s.metas)
	if n == 0 {
		return parent < 0
	}
	return len(s.leafPath) == n && &s.leafPath[0] == &s.metas[0] && int(parent) == n-1
}

// add registers a new entry in the index.
func (s *Store) add(m Meta, parent int32) {
	if s.index != nil {
		s.index[m.ID] = int32(len(s.metas))
	}
	s.indexFileValid = false
	s.metas = append(s.metas, m)
	s.parents = append(s.parents, parent)
	s.mark(len(s.metas) - 1)
}

// mark records entry i in s.marked if it is a capsule or carries facts.
func (s *Store) mark(i int) {
	if m := &s.metas[i]; m.Facts != nil || m.Type == TypeCapsule {
		s.marked = append(s.marked, int32(i))
	}
}

// Marked returns the positions in All of the entries that are capsules or
// carry facts (what resume reads past the headers), in order: a few among
// many, so a reader of the whole index need not walk it.
func (s *Store) Marked() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.marked[:len(s.marked):len(s.marked)]
}

// pathThrough returns the root→parent path onto which a child of parent is
// pushed. When parent is the leaf this is the current path itself (the push
// writes past every snapshot's end). Otherwise the path is cut to the
// deepest common ancestor and extended by walking up from parent: O(depth),
// never a rebuild over the whole file; the result is a fresh array so that
// earlier Path snapshots keep their contents.
func (s *Store) pathThrough(parent int32) []Meta {
	n := len(s.leafPath)
	if parent < 0 {
		return make([]Meta, 0, 64)
	}
	if n > 0 && s.leafPath[n-1].ID == s.metas[parent].ID {
		return s.leafPath
	}
	if n == 0 {
		// Resume: the whole path, filled from the leaf up by depth.
		p := make([]Meta, s.metas[parent].Depth+1, s.metas[parent].Depth+1+64)
		for i := parent; i >= 0; i = s.parents[i] {
			p[s.metas[i].Depth] = s.metas[i]
		}
		return p
	}
	var walk []int32
	keep := 0
	for i := parent; i >= 0; i = s.parents[i] {
		d := int(s.metas[i].Depth)
		if d < n && s.leafPath[d].ID == s.metas[i].ID {
			keep = d + 1
			break
		}
		walk = append(walk, i)
	}
	p := make([]Meta, keep, keep+len(walk)+64)
	copy(p, s.leafPath[:keep])
	for j := len(walk) - 1; j >= 0; j-- {
		p = append(p, s.metas[walk[j]])
	}
	return p
}

// Close releases the lock and closes the file. Calling it again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.lock != nil {
		// While the lock is held nobody else appends: the index file
		// describes the file as it is.
		_ = s.writeIndexFile() // a cache; resume scans without it
	}
	err := s.f.Close()
	if s.lock != nil {
		if uerr := s.lock.Close(); err == nil {
			err = uerr
		}
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("session: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("session: sync %s: %w", dir, err)
	}
	return nil
}

// loadManySpan bounds the bytes LoadMany reads in one go.
const loadManySpan = 8 << 20

// loadManyBufs are LoadMany's read buffers, kept between calls: a reader
// of a long path (a compaction's deterministic capsule, verify) calls it
// once per few thousand entries, and a new buffer each time was as much
// garbage as the file, most of what made the collector run. No decoded
// entry refers to a buffer (DecodeLine copies what it keeps).
var loadManyBufs = sync.Pool{New: func() any { return new([]byte) }}

// LoadMany is LoadLenient for a run of entries read in order (a path, a
// range of it): their lines are read with few reads, bypassing the line
// cache (a long scan would only evict the live tail from it), and decoded on
// all cores. out[i] is metas[i]'s entry; one whose payload does not decode
// is its header alone, reported once as LoadLenient does.
func (s *Store) LoadMany(metas []Meta) ([]Entry, error) { return s.loadMany(metas, false) }

// LoadManyLean is LoadMany decoding as DecodeLineLean does.
func (s *Store) LoadManyLean(metas []Meta) ([]Entry, error) { return s.loadMany(metas, true) }

func (s *Store) loadMany(metas []Meta, lean bool) ([]Entry, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	f := s.f
	s.mu.Unlock()
	out := make([]Entry, len(metas))
	errs := make([]error, len(metas))
	pooled := loadManyBufs.Get().(*[]byte)
	defer loadManyBufs.Put(pooled)
	buf := *pooled
	for start := 0; start < len(metas); {
		// A span of lines that lie close together in the file: one read.
		end := start + 1
		from := metas[start].Offset
		to := from + int64(metas[start].Len)
		for end < len(metas) {
			m := metas[end]
			if m.Offset < to || m.Offset+int64(m.Len)-from > loadManySpan || m.Offset-to > 64<<10 {
				break
			}
			to = m.Offset + int64(m.Len)
			end++
		}
		if int64(cap(buf)) < to-from {
			buf = make([]byte, to-from)
			*pooled = buf
		}
		buf = buf[:to-from]
		if _, err := f.ReadAt(buf, from); err != nil {
			return nil, fmt.Errorf("session %s: load entries at offset %d: %w", s.path, from, err)
		}
		run := metas[start:end]
		var wg sync.WaitGroup
		workers := min(runtime.GOMAXPROCS(0), len(run))
		for w := range workers {
			wg.Go(func() {
				for k := w; k < len(run); k += workers {
					m := run[k]
					out[start+k], errs[start+k] = decodeLine(buf[m.Offset-from:m.Offset-from+int64(m.Len)], lean)
				}
			})
		}
		wg.Wait()
		start = end
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		m := metas[i]
		out[i] = s.headerOnly(m)
		s.mu.Lock()
		first := !s.undecodable[m.ID]
		if first {
			if s.undecodable == nil {
				s.undecodable = map[string]bool{}
			}
			s.undecodable[m.ID] = true
		}
		hook := s.onUndecodable
		s.mu.Unlock()
		if first && hook != nil {
			hook(BadLine{Line: int(m.Line), Offset: m.Offset, Err: fmt.Errorf("entry %q cannot be decoded: %v", m.ID, err)})
		}
	}
	return out, nil
}
