package stormdir

import (
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// Meta is storm.json: what was run, with which build. ReadMeta reads it
// whole, strictly; a storm writes it as it starts (and rewrites it as
// nemesis faults happen).
type Meta struct {
	Schema     int                             `json:"schema"`
	Version    string                          `json:"version"`
	Config     Config                          `json:"config"`
	Conditions map[string]conditions.Condition `json:"conditions"`
	Cells      []history.CellKey               `json:"cells"`
	// PageSizes is the invocation page size of each world and scheme,
	// keyed "world/scheme" (--page-size, else the world's own for the
	// scheme).
	PageSizes map[string]int `json:"page_sizes"`
	// RunsInFlight is the bound the storm kept (--runs-in-flight, else
	// its worlds' own): it depends on the machine, like gomaxprocs.
	RunsInFlight int `json:"runs_in_flight_used"`
	GoMaxProcs   int `json:"gomaxprocs"`
	// AdmissionRule is the rule runs of an engine that says how busy it is
	// were admitted by (config.admission auto), in words; "" when off or
	// in a storm.json from before admission.
	AdmissionRule string `json:"admission_rule,omitempty"`
	// Latency is the mint-to-commit profile's windows, each labelled
	// measured or assumption.
	Latency []worlds.Window `json:"latency_windows,omitempty"`
	// LatencyByWorld is the profile each world drew (worlds.ResolveProfile:
	// under --latency auto, "none" where the package spends its own
	// windows); a storm.json from before it was stored has none.
	LatencyByWorld map[string]string `json:"latency_by_world,omitempty"`
	// Started is when the storm first started; a resumed storm keeps it
	// (run ids depend on it) and lists each resume in Resumed.
	Started time.Time   `json:"started"`
	Resumed []time.Time `json:"resumed,omitempty"`
	// FaultSchedule is the nemesis's plan and Faults what happened, one
	// record per fault and target, rewritten as faults start and end
	// (storm --nemesis; see nemesis.go).
	FaultSchedule []nemesis.Fault  `json:"fault_schedule,omitempty"`
	Faults        []nemesis.Record `json:"faults,omitempty"`
	// Endpoints are the servers the storm's worlds ran on, one per endpoint
	// flag, secrets removed (Plan.Endpoints); a storm.json from before they
	// were stored has none (nil), and so has a merge of shards that ran on
	// different ones.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// WorldEnv is --world-env, the settings the storm's package:… worlds
	// read their configuration from, secrets removed (StoreWorldEnv): a
	// resumed storm applies them again (Resume.WorldEnv).
	WorldEnv []Setting `json:"world_env,omitempty"`
	// Runtimes say what ran each cell whose engine is not the model (the
	// devkit engine's published runtime): nil for a storm of the model.
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// Merged says which shards a merged storm was made of (stormctl
	// merge); nil for a storm that ran as it is.
	Merged *MergeInfo `json:"merged,omitempty"`
}

// Runtime is what ran a cell when it was not (only) stormctl's model, as
// the engine described it (engines.Runtime).
type Runtime = engines.Runtime

// RuntimeOf returns the runtime that ran cell k, if storm.json says one did.
func (m *Meta) RuntimeOf(k history.CellKey) (Runtime, bool) {
	for _, r := range m.Runtimes {
		if r.Cell == k {
			return r, true
		}
	}
	return Runtime{}, false
}

// ReadMeta reads dir's storm.json whole into a Meta: the one reader of
// storm.json (Open, LoadStorm, ReadResume and merge all read it here), so
// a value of the wrong type anywhere in it is refused by every command
// alike. Errors are *ArtifactErrors naming the file and, where it can be
// told, the line: not JSON or cut off, a value of the wrong type, a value
// the document's types refuse, an unknown schema version.
func ReadMeta(dir string) (*Meta, error) {
	var m Meta
	if err := ReadDocument(filepath.Join(dir, FileStorm), &m, func() int { return m.Schema }); err != nil {
		return nil, err
	}
	return &m, nil
}

// nemesisKinds lists the fault kinds the storm's config names (storm
// --nemesis), none for a storm without faults.
func (m *Meta) nemesisKinds() []string {
	var kinds []string
	for _, k := range m.Config.Nemesis.Kinds {
		kinds = append(kinds, string(k))
	}
	return kinds
}

// Endpoint is a server a storm's worlds ran on, named by the flag that
// picks it ("pg-url", "ingest-url", ...), as storm.json keeps it: Value is
// the flag's value with any secret (password, token) removed, "" when the
// flag was not given (the world's own embedded server); Secret says the
// value had one, so that a resumed storm needs the flag given again. A
// Secret with an empty Value is a value that could not be stored without
// its secret.
type Endpoint struct {
	Flag   string `json:"flag"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

// WriteMeta rewrites storm.json (atomically) with meta: a storm's record of
// what happened while it ran (the nemesis's faults) lands there as it goes.
func (a *Writer) WriteMeta(meta *Meta) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return WriteJSON(filepath.Join(a.dir, FileStorm), meta)
}
