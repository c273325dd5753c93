package compaction

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FlightRecord is one line of the flight file (R-O2): what an operation did,
// with its figures, and never the summary's or any message's content.
type FlightRecord struct {
	Time            time.Time `json:"time"`
	SessionID       string    `json:"sessionId,omitempty"`
	OperationID     string    `json:"operationId"`
	Trigger         string    `json:"trigger"`
	Outcome         string    `json:"outcome"`
	HardLimit       int       `json:"hardLimit"`
	SoftLimit       int       `json:"softLimit"`
	KeepRecent      int       `json:"keepRecentTokens"`
	TokensBefore    int       `json:"tokensBefore"`
	TokensAfter     int       `json:"tokensAfter"`
	ReclaimedTokens int       `json:"reclaimedTokens"`
	CheckpointID    string    `json:"checkpointId,omitempty"`
	Quality         string    `json:"quality,omitempty"`
	DurationMs      int64     `json:"durationMs"`
	Source          string    `json:"source,omitempty"`
	// ReasonCode is a short machine-readable reason; free text is left out
	// so no content can leak into the record.
	ReasonCode string `json:"reasonCode,omitempty"`
	// NativeOutcome and NativeDurationMs are the native compaction call's
	// outcome and duration (SPEC §11), never its content.
	NativeOutcome    string `json:"nativeOutcome,omitempty"`
	NativeDurationMs int64  `json:"nativeDurationMs,omitempty"`
	// SummaryAsked says a summary model was asked: a skip with it set is a
	// paid request thrown away.
	SummaryAsked bool `json:"summaryAsked,omitempty"`
	// CachedTokens is the part of the session's last request before the
	// operation that the provider read from its prompt cache.
	CachedTokens int `json:"cachedTokens,omitempty"`
}

// NewFlightRecord makes the record of a finished operation.
func NewFlightRecord(now time.Time, sessionID, source string, p Plan, r CompactionResult) FlightRecord {
	return FlightRecord{
		Time: now.UTC(), SessionID: sessionID, OperationID: r.OperationID, Trigger: r.Trigger, Outcome: r.Outcome,
		HardLimit: p.HardLimit, SoftLimit: p.SoftLimit, KeepRecent: p.Config.KeepRecentTokens,
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, ReclaimedTokens: r.ReclaimedTokens,
		CheckpointID: r.CheckpointID, Quality: r.Quality, DurationMs: r.DurationMs, Source: source,
		ReasonCode: reasonCode(r), NativeOutcome: r.NativeOutcome, NativeDurationMs: r.NativeDurationMs,
		SummaryAsked: r.SummaryAsked,
	}
}

func reasonCode(r CompactionResult) string {
	switch r.Outcome {
	case OutcomeCompleted:
		if r.Quality == "degraded" {
			return "fallback"
		}
		return ""
	case OutcomeSkipped:
		if r.Declined != nil && !r.Generated {
			// Declined by the prediction, before anything was generated.
			return "predicted_gate"
		}
		return "gate"
	case OutcomeCancelled:
		return "cancel"
	case OutcomeStale:
		return "leaf_moved"
	}
	return "error"
}

// FlightRecorder stores flight records.
type FlightRecorder interface {
	Record(FlightRecord) error
}

// FlightFile appends flight records to a JSONL file, one line each.
type FlightFile struct {
	mu   sync.Mutex // guards f and the write order
	f    *os.File
	path string
}

// OpenFlightFile opens (creating) the flight file at path for appending.
func OpenFlightFile(path string) (*FlightFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open flight file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open flight file: %w", err)
	}
	return &FlightFile{f: f, path: path}, nil
}

// Path is the file's path.
func (ff *FlightFile) Path() string { return ff.path }

// Record implements FlightRecorder.
func (ff *FlightFile) Record(r FlightRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ff.mu.Lock()
	defer ff.mu.Unlock()
	if ff.f == nil {
		return os.ErrClosed
	}
	_, err = ff.f.Write(append(line, '\n'))
	return err
}

// Close closes the file.
func (ff *FlightFile) Close() error {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	if ff.f == nil {
		return nil
	}
	err := ff.f.Close()
	ff.f = nil
	return err
}
