package session

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/soba-agent/soba-lsp/internal/background"
	"github.com/soba-agent/soba-lsp/internal/id"
)

// The index file <session>.jsonl.index is a cache of what resume learns by
// scanning a session file: every entry's header (id, parent, type, place,
// tokens, timestamp, line) and the payload facts the index keeps. The Store
// that holds a session's lock writes it when it closes, and only for a file
// in which every line is an entry of a known type (nothing for resume to
// report). The next resume uses it instead of reading the transcript, when
// the transcript is the very file it was written from and unchanged since:
// same device and inode, same size, same modification and change times
// (the change time cannot be set back by a user). Anything else — no index
// file, another file, a later write, a torn or foreign index file — and
// resume scans the transcript as before. The transcript stays the record
// (R-T1): payloads are always read from it, `soba-lsp verify` never uses the
// index file, and deleting the index file changes nothing but speed.
// docs/decisions.md "The index file".

// IndexFileSuffix is appended to a session file's path to name its index
// file.
const IndexFileSuffix = ".index"

// indexFileMinBytes is the smallest transcript that gets an index file:
// below it the scan takes about a millisecond, and the session directory
// stays one file per session. (A variable so that tests can index small
// files.)
var indexFileMinBytes int64 = 1 << 20

// indexMagic starts every index file; the last byte is the format version.
// Version 2: Facts carry a settings entry's model picks.
var indexMagic = []byte("SOBAIDX\x02")

// fileStamp identifies a file's contents without reading them: the index
// file is valid for exactly the stamp it records (stampOf, per platform).
type fileStamp struct {
	dev, ino, size   uint64
	mtimeNs, ctimeNs int64
	// tail is the checksum of the file's last tailBytes: a change within
	// the file system's timestamp granularity that keeps the size is still
	// seen where it touches the end, where a writer appends.
	tail uint32
}

// tailBytes is how much of the end of the file the stamp checksums.
const tailBytes = 64 << 10

// stampFile is the stamp of the open file f.
func stampFile(f *os.File) (fileStamp, bool) {
	fi, err := f.Stat()
	if err != nil {
		return fileStamp{}, false
	}
	st, ok := stampOf(fi)
	if !ok || st.size == 0 {
		return fileStamp{}, false
	}
	n := min(int64(st.size), tailBytes)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(st.size)-n); err != nil {
		return fileStamp{}, false
	}
	st.tail = crc32.Checksum(buf, castagnoli)
	return st, true
}

// entryTypeCodes lists the entry types this version knows, in the order
// that numbers them in the index file (a clean file holds no other).
var entryTypeCodes = []string{TypeSession, TypeUser, TypeAssistant, TypeToolResult, TypeCapsule, TypeCheckpoint,
	TypeCapsuleLoad, TypeSettings}

func typeCode(t string) (byte, bool) {
	for i, k := range entryTypeCodes {
		if k == t {
			return byte(i), true
		}
	}
	return 0, false
}

// Record flags.
const (
	ixUsage = 1 << iota // Meta.MayHaveUsage
	ixFacts             // the entry has Facts (in the extras)
	ixZone              // the timestamp is not UTC (its offset is in the extras)
)

// ixRecord is the size of one entry's fixed-width record: id length (2),
// type (1), flags (1), parent index + 1 (4), offset (8), length (4),
// tokens (4), timestamp in Unix nanoseconds (8), line (4). Fixed width so
// that reading 200,000 of them is a few loads each.
//
// The file is: the magic; nine little-endian uint64s (the stamp's six
// numbers, the lines, the entries, the bytes of ids); every id, one after
// the other, read as one string that each Meta.ID slices; the records; the
// count of extras and the extras (facts and time zones, rare); a CRC-32C of
// everything before it. The records are read in small chunks, so reading
// the index costs little more memory than the index itself.
const ixRecord = 36

// ixHead is the size of the magic and the nine numbers after it.
var ixHead = len(indexMagic) + 9*8

// encodeIndex is the index file for the entries of s, valid for stamp. The
// caller holds s.mu.
func (s *Store) encodeIndex(st fileStamp) ([]byte, error) {
	idBytes := 0
	for _, m := range s.metas {
		idBytes += len(m.ID)
	}
	b := make([]byte, 0, ixHead+idBytes+len(s.metas)*ixRecord+64)
	b = append(b, indexMagic...)
	le := binary.LittleEndian
	for _, v := range []uint64{st.dev, st.ino, st.size, uint64(st.mtimeNs), uint64(st.ctimeNs), uint64(st.tail),
		uint64(s.lines), uint64(len(s.metas)), uint64(idBytes)} {
		b = le.AppendUint64(b, v)
	}
	for _, m := range s.metas {
		b = append(b, m.ID...)
	}
	type extra struct {
		i     int
		zone  int
		facts []byte
	}
	var extras []extra
	for i, m := range s.metas {
		code, ok := typeCode(m.Type)
		switch {
		case !ok:
			return nil, fmt.Errorf("entry %s has type %q", m.ID, m.Type)
		case len(m.ID) == 0 || len(m.ID) > math.MaxUint16 || m.Len < 0 || m.Tokens < 0 || m.Line <= 0 || m.tz == tzNone:
			return nil, fmt.Errorf("entry %s does not fit the index file", m.ID)
		}
		var flags byte
		x := extra{i: i}
		if m.MayHaveUsage {
			flags |= ixUsage
		}
		if m.Facts != nil {
			flags |= ixFacts
			var err error
			if x.facts, err = json.Marshal(m.Facts); err != nil {
				return nil, err
			}
		}
		if m.tz != tzUTC {
			flags |= ixZone
			x.zone = int(m.tz)
		}
		if flags&(ixFacts|ixZone) != 0 {
			extras = append(extras, x)
		}
		b = le.AppendUint16(b, uint16(len(m.ID)))
		b = append(b, code, flags)
		b = le.AppendUint32(b, uint32(s.parents[i]+1))
		b = le.AppendUint64(b, uint64(m.Offset))
		b = le.AppendUint32(b, uint32(m.Len))
		b = le.AppendUint32(b, uint32(m.Tokens))
		b = le.AppendUint64(b, uint64(m.ts))
		b = le.AppendUint32(b, uint32(m.Line))
	}
	b = le.AppendUint64(b, uint64(len(extras)))
	for _, x := range extras {
		b = le.AppendUint32(b, uint32(x.i))
		b = le.AppendUint32(b, uint32(int32(x.zone)))
		b = le.AppendUint32(b, uint32(len(x.facts)))
		b = append(b, x.facts...)
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errIndexFile = errors.New("not a valid index file")

// decodeIndex fills s.metas, s.parents and s.lines from data, the bytes of
// an index file valid for st. It checks what the file's checksum cannot: that
// it is the index of this transcript as it is now, and that every record is
// one resume could have made (entries in file order, inside the file,
// parents before their children). Anything else is errIndexFile, and the
// caller scans; nothing is kept unless the checksum at the end agrees.
// data may be a mapping of the file (mapFile): nothing decoded refers to it.
func (s *Store) decodeIndex(data []byte, st fileStamp) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverFault(&err)
	le := binary.LittleEndian
	total := int64(len(data))
	if total < int64(ixHead)+8+4 || !bytes.HasPrefix(data, indexMagic) {
		return errIndexFile
	}
	p := data[len(indexMagic):ixHead]
	for _, want := range []uint64{st.dev, st.ino, st.size, uint64(st.mtimeNs), uint64(st.ctimeNs), uint64(st.tail)} {
		if le.Uint64(p) != want {
			return errIndexFile // another file, or this one changed since
		}
		p = p[8:]
	}
	lines, n, idBytes := le.Uint64(p), le.Uint64(p[8:]), le.Uint64(p[16:])
	rest := uint64(total) - uint64(ixHead) - 8 - 4
	if n > lines || lines > st.size || idBytes > rest || n > (rest-idBytes)/ixRecord {
		return errIndexFile
	}
	// The checksum is summed on another core while this one decodes; the
	// records are checked one by one meanwhile, and nothing is kept unless
	// it agrees.
	body, sum := data[:total-4], le.Uint32(data[total-4:])
	summed := make(chan bool, 1)
	idEnd := ixHead + int(idBytes) // within total: checked above
	ids := string(data[ixHead:idEnd])
	records := data[idEnd : idEnd+int(n)*ixRecord]
	metas := make([]Meta, n, n+64)
	parents := make([]int32, n, n+64)
	// A large index is mostly new memory, and faulting it in is most of
	// the cost: the other core faults in the second half while this one
	// fills the first, then sums the checksum.
	half := int(n)
	if n >= 16384 && runtime.GOMAXPROCS(0) > 1 {
		half = int(n) / 2
	}
	touched := make(chan struct{})
	// Every return waits for the other core, which reads data too.
	var sumOK, waited bool
	wait := func() bool {
		if !waited {
			sumOK, waited = <-summed, true
		}
		return sumOK
	}
	defer wait()
	background.Go(func() {
		ok, isTouched := false, false
		defer func() {
			if !isTouched { // a panic before: the reader must not wait for it
				close(touched)
			}
			summed <- ok
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer recoverFault(nil) // a mapping cut short: ok stays false
		per := 4096 / int(unsafe.Sizeof(Meta{}))
		for i := half; i < len(metas); i += per {
			metas[i].Line = 0 // one write per page
		}
		close(touched)
		isTouched = true
		ok = crc32.Checksum(body, castagnoli) == sum
	}, nil)
	flagsOf := make([]byte, 0, 64) // flags of the entries with extras, by index in extrasAt
	extrasAt := make([]int, 0, 64)
	var capsules, withFacts []int32 // for s.marked
	size := int64(st.size)
	var prevEnd int64
	prevLine := 0
	idAt := 0
	for i := range int(n) {
		if i == half {
			<-touched
		}
		r := records[i*ixRecord : (i+1)*ixRecord]
		idLen := int(le.Uint16(r))
		code, flags := r[2], r[3]
		parent := int64(le.Uint32(r[4:])) - 1
		off := int64(le.Uint64(r[8:]))
		ln := int64(le.Uint32(r[16:]))
		line := int(le.Uint32(r[32:]))
		if idLen == 0 || idAt+idLen > len(ids) || int(code) >= len(entryTypeCodes) || parent >= int64(i) ||
			off < prevEnd || off > size || ln >= size-off || line <= prevLine || uint64(line) > lines {
			return errIndexFile
		}
		m := &metas[i]
		m.ID = ids[idAt : idAt+idLen]
		idAt += idLen
		m.Type = entryTypeCodes[code]
		tokens := le.Uint32(r[20:])
		if ln > MaxEntryBytes || tokens > math.MaxInt32 || line > math.MaxInt32 {
			return errIndexFile
		}
		m.Offset, m.Len, m.Line, m.Tokens = off, int32(ln), int32(line), int32(tokens)
		m.ts, m.tz = int64(le.Uint64(r[24:])), tzUTC
		m.MayHaveUsage = flags&ixUsage != 0
		parents[i] = int32(parent)
		if parent >= 0 {
			m.Depth = metas[parent].Depth + 1
		}
		if flags&(ixFacts|ixZone) != 0 {
			extrasAt, flagsOf = append(extrasAt, i), append(flagsOf, flags)
		}
		if m.Type == TypeCapsule {
			capsules = append(capsules, int32(i))
		}
		prevEnd, prevLine = off+ln+1, line
	}
	if idAt != len(ids) || prevEnd != size {
		return errIndexFile // the entries must end where the file ends
	}
	tail := data[idEnd+int(n)*ixRecord : total-4]
	extras := le.Uint64(tail)
	p = tail[8:]
	if extras != uint64(len(extrasAt)) {
		return errIndexFile
	}
	for k := range extrasAt {
		if len(p) < 12 {
			return errIndexFile
		}
		i, zone, l := le.Uint32(p), int32(le.Uint32(p[4:])), uint64(le.Uint32(p[8:]))
		p = p[12:]
		if int(i) != extrasAt[k] || l > uint64(len(p)) {
			return errIndexFile
		}
		m := &metas[i]
		if flagsOf[k]&ixZone != 0 {
			if zone < -24*3600 || zone > 24*3600 {
				return errIndexFile
			}
			m.tz = zone
		}
		if flagsOf[k]&ixFacts != 0 {
			withFacts = append(withFacts, int32(i))
			m.Facts = new(Facts)
			if err := json.Unmarshal(p[:l], m.Facts); err != nil {
				return errIndexFile
			}
		}
		p = p[l:]
	}
	if len(p) != 0 || !wait() {
		return errIndexFile
	}
	s.metas, s.parents, s.lines = metas, parents, int(lines)
	s.marked = slices.Concat(capsules, withFacts)
	slices.Sort(s.marked)
	s.marked = slices.Compact(s.marked)
	return nil
}

// readIndexFile resumes from the index file of the session open as f, if
// there is a valid one; false means scan. The index file is opened as the
// transcript is (no link, no FIFO, a regular file) and read only up to the
// transcript's size: an index is always smaller than what it indexes.
func (s *Store) readIndexFile(f *os.File, rep *OpenReport) bool {
	if s.opt.FullScan {
		return false
	}
	x, err := openFile(s.path+IndexFileSuffix, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer x.Close()
	st, ok := stampFile(f)
	if !ok {
		return false
	}
	xi, err := x.Stat()
	if err != nil || xi.Size() > int64(st.size)+int64(len(indexMagic))+64 {
		return false
	}
	data, unmap, err := mapFile(x, xi.Size())
	if err != nil {
		return false
	}
	err = s.decodeIndex(data, st)
	unmap()
	if err != nil {
		return false
	}
	s.size = int64(st.size)
	s.index = nil // built on first need (ids)
	s.cleanIndex, s.indexFileValid = true, true
	rep.Entries = len(s.metas)
	rep.FromIndexFile = true
	return true
}

// writeIndexFile writes the index file of a clean store that changed since
// it was opened, replacing any earlier one by rename so that a reader never
// sees half of it. It is a cache: failing to write it changes nothing else,
// and the error is only for tests. The caller holds s.mu and the lock.
func (s *Store) writeIndexFile() error {
	if s.readOnly || !s.cleanIndex || s.indexFileValid || s.broken != nil || s.heal || len(s.metas) == 0 ||
		s.size < indexFileMinBytes {
		return nil
	}
	st, ok := stampFile(s.f)
	if !ok || int64(st.size) != s.size {
		return nil
	}
	b, err := s.encodeIndex(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(s.path), "."+filepath.Base(s.path)+IndexFileSuffix+"."+id.Entry(func(string) bool { return false })+".tmp")
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := t.Write(b); err != nil {
		t.Close()
		os.Remove(tmp)
		return err
	}
	if err := t.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, s.path+IndexFileSuffix); err != nil {
		os.Remove(tmp)
		return err
	}
	s.indexFileValid = true
	return nil
}

// recoverFault, deferred by a reader of a mapped file that has called
// debug.SetPanicOnFault, turns the fault of reading past the end of a file
// cut short under the mapping into errIndexFile in *err (when err is not
// nil); any other panic goes on.
func recoverFault(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if _, fault := r.(interface{ Addr() uintptr }); !fault {
		panic(r)
	}
	if err != nil {
		*err = errIndexFile
	}
}
