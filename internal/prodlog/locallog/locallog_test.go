package locallog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/internal/prodlog/locallog"
)

// The fixture testdata/data is a world-local 4.4.1 data directory in the
// package's layout: run wrun_…YS8 of the published runtime's step-storm
// (its run file, a run_started listed before its run_created as 4.8.9's
// start() can leave them, a wait_created in a tagged file), and one event
// of another run whose id sorts in between.
const (
	dir = "testdata/data"
	run = "wrun_01M92J0PZ7R666XJXTJZ7V1YS8"
)

// TestRead: a run's events come back in the package's list order (by
// id), only the run's, with its run file's workflow and status, each
// keeping the package's own copy (byte arrays as world-local writes them).
func TestRead(t *testing.T) {
	log, err := locallog.Read(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	if log.Workflow != "workflow//./workflows/step-storm//stepStorm" || log.Status != "failed" {
		t.Errorf("workflow %q, status %q", log.Workflow, log.Status)
	}
	var got []string
	for _, e := range log.Events {
		got = append(got, string(e.Type)+" "+e.ID)
		if !strings.Contains(string(e.Package), `"eventId":"`+e.ID+`"`) {
			t.Errorf("event %s: package copy %s", e.ID, e.Package)
		}
	}
	want := []string{"run_started evnt_01M92J0PZ8000000000000000B", "run_created evnt_01M92J0PZ9000000000000000A", "wait_created evnt_01M92J0Q0PSYJD75W97PVTSXDP"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if created := log.Events[1]; created.Type != eventlog.RunCreated || !strings.Contains(string(created.Package), `{"__type":"Uint8Array","data":"ZGV2bF`) {
		t.Errorf("run_created's package copy %s: want its input as world-local's typed byte array", created.Package)
	}
}

// TestReadRefuses: a directory that is no world-local data directory, a
// run it does not hold, a run id that is a path, each an error.
func TestReadRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, dir, run string
		is             error
		want           string
	}{
		{"no events directory", "testdata", run, locallog.ErrNoDir, "not a world-local data directory"},
		{"no such run", dir, "wrun_01M92J0PZ7R666XJXTJZ7V1YSZ", prodlog.ErrNoRun, "no such run"},
		{"a path for a run", dir, "../data", nil, "not a run id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := locallog.Read(tt.dir, tt.run)
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("Read(%s, %s) = %v; want an error with %q", tt.dir, tt.run, err, tt.want)
			}
		})
	}
}
