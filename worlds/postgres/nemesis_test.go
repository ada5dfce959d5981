package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds/nemesistest"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/worldtest"
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

// TestNemesisKeepsPlaintextFallback: the same URL works with and without
// the nemesis. sslmode=prefer (the default when a URL names none) tries
// TLS and falls back to plaintext; the embedded cluster serves no TLS, so
// through the nemesis proxy it is reached by the fallback alone. The
// machine's own PostgreSQL service (127.0.0.1:5432, database test, when
// reachable) is tried too with the default sslmode, whatever its TLS
// setting.
func TestNemesisKeepsPlaintextFallback(t *testing.T) {
	urls := []string{strings.Replace(cluster.URL(t), "?sslmode=disable", "", 1)}
	if u, reason := machinePostgres(t); u != "" {
		urls = append(urls, u)
	} else {
		fmt.Println("TestNemesisKeepsPlaintextFallback: machine PostgreSQL skipped:", reason)
		t.Log("machine PostgreSQL skipped:", reason)
	}
	for i, u := range urls {
		if strings.Contains(u, "sslmode") {
			t.Fatalf("%s names an sslmode: the test is of the default (prefer)", u)
		}
		w, err := postgres.Open(t.Context(), postgres.Config{URL: u, PoolSize: 2, Nemesis: true})
		if err != nil {
			t.Fatalf("Open with the nemesis on URL %d: %v", i, err)
		}
		run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
		if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "a")}); err != nil {
			t.Errorf("Append through the nemesis proxy on URL %d: %v", i, err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// machinePostgres returns a URL (with no sslmode) of the machine's own
// PostgreSQL service at 127.0.0.1:5432, database test, or "" and why not.
func machinePostgres(t *testing.T) (url, reason string) {
	t.Helper()
	var tried []string
	for _, u := range []string{"postgres://postgres@127.0.0.1:5432/test", "postgres://root@127.0.0.1:5432/test"} {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		c, err := pgx.Connect(ctx, u)
		cancel()
		if err == nil {
			c.Close(context.Background())
			return u, ""
		}
		tried = append(tried, err.Error())
	}
	return "", "no PostgreSQL service at 127.0.0.1:5432/test: " + strings.Join(tried, "; ")
}
