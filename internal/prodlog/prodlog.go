// Package prodlog is a production run's log as a World package stored it,
// read back from where it lives: world-postgres's tables (pglog, and
// pgattach for the forensics of a whole database) or a world-local data
// directory (locallog). Log is the one shape every reader returns and
// replay --pg-url / --local-dir take.
package prodlog

import (
	"errors"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// The readers' refusals, one for every source: a table it reads is not
// in the given schema (ErrNoTable), a run is in none of its tables or
// files (ErrNoRun).
var (
	ErrNoTable = errors.New("no world-postgres table")
	ErrNoRun   = errors.New("no such run")
)

// PgURLHelp is --pg-url's help where it names a production database to
// read (forensics, replay): one meaning for the commands that read what a
// World package stored, never written to. The commands that storm (storm,
// fidelity, bench, certify) give --pg-url the other meaning: a server
// stormctl makes scratch schemas or databases on (docs/commands.md).
const PgURLHelp = "an existing database written by the published @workflow/world-postgres, read only"

// Log is one run's log as stored.
type Log struct {
	RunID string
	// Workflow is the store's name of the run's workflow and Status its
	// status there ("" when the run has no row or file).
	Workflow string
	Status   string
	// Source says where it was read (a server, secrets removed, or a data
	// directory) and World which world package wrote it (devkit-postgres,
	// devkit-local).
	Source string
	World  string
	// Events are the run's events in the package's list order, mapped
	// onto what stormctl wrote; a run of another writer's workflow keeps
	// the package's eventData as each event's payload.
	Events []eventlog.Event
	// CreatedAt holds each event's created_at column where the store has
	// one (by index), nil otherwise.
	CreatedAt []time.Time
}
