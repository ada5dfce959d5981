package worlds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// ProfileFilePrefix starts a --latency value that names a profile file.
const ProfileFilePrefix = "file:"

// ProfileFileSchema is the version of the profile file this build reads
// and writes.
const ProfileFileSchema = 1

// maxProfileFile bounds what a profile file may weigh: a profile has a row
// per event type, a few kilobytes.
const maxProfileFile = 1 << 20

// ProfileFile is a latency profile as a file: log-normal windows per event
// type, and one per class ("decision", "fact") for the types without a row
// of their own. `stormctl forensics DIR --derive-latency PATH` writes one
// from the windows a storm measured; `--latency file:PATH` draws from it.
// **contract**
type ProfileFile struct {
	Schema int `json:"schema"`
	// Source says where the windows were measured (the storm, its engine
	// and world, the machine).
	Source  string   `json:"source"`
	Windows []Window `json:"windows"`
}

// ParseProfileFile parses a profile file's bytes into a profile named
// name (its --latency spelling) drawing with seed. Every row needs a known
// event type or class, a median in (0, max], a sigma in [0, 10]; the
// "decision" and "fact" rows are required, so every type has a window.
func ParseProfileFile(data []byte, name string, seed uint64) (Profile, error) {
	var f ProfileFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a profile file: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a profile file: more than one JSON value")
	}
	if f.Schema != ProfileFileSchema {
		return nil, fmt.Errorf("profile file schema %d, this build reads %d", f.Schema, ProfileFileSchema)
	}
	rows := make(map[string]logNormal, len(f.Windows))
	for i, w := range f.Windows {
		if w.Type != "decision" && w.Type != "fact" && !eventlog.Type(w.Type).Valid() {
			return nil, fmt.Errorf("window %d: type %q is neither an event type nor a class (decision, fact)", i+1, w.Type)
		}
		if _, dup := rows[w.Type]; dup {
			return nil, fmt.Errorf("window %d: type %q has two rows", i+1, w.Type)
		}
		switch {
		case w.Median <= 0 || w.Max < w.Median:
			return nil, fmt.Errorf("window %s: want 0 < median (%s) <= max (%s)", w.Type, w.Median, w.Max)
		case math.IsNaN(w.Sigma) || w.Sigma < 0 || w.Sigma > 10:
			return nil, fmt.Errorf("window %s: sigma %v outside [0, 10]", w.Type, w.Sigma)
		}
		src := w.Source
		if src == "" {
			src = f.Source
		}
		rows[w.Type] = logNormal{median: w.Median, sigma: w.Sigma, max: w.Max, source: src}
	}
	for _, class := range []string{"decision", "fact"} {
		if _, ok := rows[class]; !ok {
			return nil, fmt.Errorf("no %q row: every type needs a window (derive the file from a storm whose runs wrote both decisions and facts)", class)
		}
	}
	return newLogNormalProfile(name, rows, seed), nil
}

// readProfileFile reads the profile file a --latency file:PATH value names.
func readProfileFile(s string, seed uint64) (Profile, error) {
	path := strings.TrimPrefix(s, ProfileFilePrefix)
	if path == "" {
		return nil, fmt.Errorf("invalid --latency %q: want file:PATH, a profile file (stormctl forensics DIR --derive-latency PATH writes one)", s)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("invalid --latency %q: %w", s, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProfileFile+1))
	if err != nil {
		return nil, fmt.Errorf("invalid --latency %q: read: %w", s, err)
	}
	if len(data) > maxProfileFile {
		return nil, fmt.Errorf("invalid --latency %q: larger than %d bytes, not a profile file", s, maxProfileFile)
	}
	p, err := ParseProfileFile(data, s, seed)
	if err != nil {
		return nil, fmt.Errorf("invalid --latency %q: %w", s, err)
	}
	return p, nil
}

// NewProfileFile is the profile file of windows measured by source:
// rows sorted by type, as a storm.json records them.
func NewProfileFile(source string, rows []Window) ProfileFile {
	return ProfileFile{Schema: ProfileFileSchema, Source: source, Windows: rows}
}
