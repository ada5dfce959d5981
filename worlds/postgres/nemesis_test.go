package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/nemesis"
	"github.com/stormctl/stormctl/nemesis/nemesistest"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// TestNemesis runs the fault contract (nemesistest) against every fault
// kind of the postgres world, under seq (fenced) and ulid (unfenced): every
// error a writer or reader sees while the fault lasts is ErrUnavailable,
// no read is anything but a prefix of the final log, and writes go through
// again once it heals. pg-restart kills a cluster of its own (the
// package's is shared with the other tests).
func TestNemesis(t *testing.T) {
	cluster.URL(t)
	tests := []struct {
		kind  nemesis.Kind
		fault nemesis.Fault
	}{
		{nemesis.PGTerminate, nemesis.Fault{}},
		{nemesis.Latency, nemesis.Fault{For: 600 * time.Millisecond, Delay: 100 * time.Millisecond}},
		{nemesis.PGRestart, nemesis.Fault{For: 500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			if testing.Short() && tt.kind == nemesis.PGRestart {
				t.Skip("pg-restart starts a cluster of its own (about 3 s): skipped under -short")
			}
			cfg := postgres.Config{Nemesis: true}
			if tt.kind == nemesis.PGRestart {
				c, err := postgres.StartEmbedded(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := c.Stop(); err != nil {
						t.Error(err)
					}
				})
				cfg.URL, cfg.Cluster = c.URL(), c
			}
			w := openWorld(t, cfg)
			target := findTarget(t, w.Targets(), tt.kind)
			for _, scheme := range []eventlog.Scheme{eventlog.SchemeSeq, eventlog.SchemeULID} {
				t.Run(string(scheme), func(t *testing.T) {
					nemesistest.Exercise(t, w, eventlog.Run{Scheme: scheme}, func(ctx context.Context) error {
						f := tt.fault
						f.Kind = tt.kind
						detail, err := target.Inject(ctx, f)
						t.Logf("%s on %s: %s", tt.kind, target.Name, detail)
						return err
					})
				})
			}
		})
	}
}

// TestNemesisRefusesRemoteServer: a server off loopback is refused before
// anything is dialled, with a *nemesis.NotLoopbackError.
func TestNemesisRefusesRemoteServer(t *testing.T) {
	_, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://me:pw@db.example.com:5432/storms", Nemesis: true})
	var nl *nemesis.NotLoopbackError
	if !errors.As(err, &nl) {
		t.Fatalf("Open with a remote server and the nemesis on = %v, want a NotLoopbackError", err)
	}
	t.Log(err)
}

// TestNoTargetsWithoutNemesis: a World opened without the nemesis offers
// nothing to break.
func TestNoTargetsWithoutNemesis(t *testing.T) {
	cluster.URL(t)
	if ts := openWorld(t, postgres.Config{}).Targets(); len(ts) != 0 {
		t.Fatalf("Targets() = %d targets, want none", len(ts))
	}
}

func findTarget(t *testing.T, ts []nemesis.Target, k nemesis.Kind) nemesis.Target {
	t.Helper()
	for _, x := range ts {
		if x.Kind == k {
			return x
		}
	}
	t.Fatalf("no %s target among %d", k, len(ts))
	return nemesis.Target{}
}
