package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/worlds/postgres"
)

// Shared is the one embedded cluster the tests of a package share, started
// by the package's TestMain before its tests and stopped after them:
//
//	var cluster pgtest.Shared
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }
//
// Without PostgreSQL binaries the tests that ask for it are skipped with
// the reason. The zero value is ready for Main.
type Shared struct {
	cluster *postgres.Cluster
	skip    string
}

// Main starts the cluster, runs the tests, stops the cluster and checks
// that its directory is gone and that no goroutine leaked; it returns the
// exit code.
func (s *Shared) Main(m *testing.M) int {
	c, err := postgres.StartEmbedded(context.Background(), nil)
	switch {
	case errors.Is(err, postgres.ErrNoPostgres):
		s.skip = "no embedded PostgreSQL: " + err.Error()
		fmt.Println("skipping the cluster tests:", s.skip)
	case err != nil:
		fmt.Fprintln(os.Stderr, "start the embedded cluster:", err)
		return 1
	default:
		s.cluster = c
	}
	code := m.Run()
	if s.cluster != nil {
		if err := s.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the embedded cluster:", err)
			code = 1
		}
		if _, err := os.Stat(s.cluster.Dir()); !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "the embedded cluster's directory is still there:", s.cluster.Dir(), err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			code = 1
		}
	}
	return code
}

// Cluster returns the shared cluster, skipping t when there is none.
func (s *Shared) Cluster(t testing.TB) *postgres.Cluster {
	t.Helper()
	switch {
	case s.cluster == nil && s.skip == "":
		t.Fatal("pgtest.Shared: no cluster: the package's TestMain does not call Main")
	case s.cluster == nil:
		t.Skip(s.skip)
	}
	return s.cluster
}

// URL returns the shared cluster's connection string, skipping t when
// there is none.
func (s *Shared) URL(t testing.TB) string {
	t.Helper()
	return s.Cluster(t).URL()
}
