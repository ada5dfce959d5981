package postgres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stormctl/stormctl/internal/nemesis"
)

var _ nemesis.Targeter = (*World)(nil)

// appName is the application_name of a World's connections: how
// pg-terminate finds them in pg_stat_activity.
func appName(schema string) string { return "stormctl " + schema }

// faults is a World's fault plumbing under Config.Nemesis: the proxy its
// pool connects through, and a way past it to the server.
type faults struct {
	proxy   *nemesis.Proxy
	direct  *pgx.ConnConfig // the server itself, for pg_terminate_backend
	app     string
	schema  string
	cluster *Cluster
}

// newFaults checks that the server is on loopback, starts a proxy in front
// of it and points cc (the pool's connection config) at the proxy.
func newFaults(cfg Config, cc *pgx.ConnConfig) (*faults, error) {
	if strings.HasPrefix(cc.Host, "/") {
		return nil, fmt.Errorf("postgres: --nemesis needs the server on a loopback TCP address, not the unix socket %s", cc.Host)
	}
	addr := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	if err := nemesis.CheckLoopback("the postgres server", addr); err != nil {
		return nil, err
	}
	p, err := nemesis.NewProxy(addr)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	f := &faults{proxy: p, direct: cc.Copy(), app: appName(cfg.Schema), schema: cfg.Schema, cluster: cfg.Cluster}
	f.direct.RuntimeParams["application_name"] = "stormctl nemesis"
	host, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	throughProxy(cc, host, uint16(n))
	return f, nil
}

// throughProxy points cc at the proxy on host:port, keeping the TLS
// attempts the URL asked for: with sslmode=prefer (pgx's default) the
// config tries TLS first and falls back to plaintext on the same server, so
// a server without TLS is still reached. The proxy forwards to cc's own
// server only, so a fallback to another server (a multi-host URL) is
// dropped rather than dialled past the proxy.
func throughProxy(cc *pgx.ConnConfig, host string, port uint16) {
	var kept []*pgconn.FallbackConfig
	for _, fb := range cc.Fallbacks {
		if fb == nil || fb.Host != cc.Host || fb.Port != cc.Port {
			continue
		}
		c := *fb
		c.Host, c.Port = host, port
		kept = append(kept, &c)
	}
	cc.Host, cc.Port, cc.Fallbacks = host, port, kept
}

func (f *faults) close() {
	if f != nil {
		_ = f.proxy.Close()
	}
}

// Targets implements nemesis.Targeter: latency on the World's proxy,
// pg-terminate of its connections and, on the embedded cluster,
// pg-restart of the cluster (one target every World on it shares). A World
// opened without Config.Nemesis has none.
func (w *World) Targets() []nemesis.Target {
	f := w.nemesis
	if f == nil {
		return nil
	}
	ts := []nemesis.Target{
		f.proxy.Target("postgres schema " + f.schema),
		{Kind: nemesis.PGTerminate, Name: fmt.Sprintf("connections of schema %s (application_name %q)", f.schema, f.app), Inject: f.terminate},
	}
	if f.cluster != nil {
		ts = append(ts, nemesis.Target{Kind: nemesis.PGRestart, Name: fmt.Sprintf("postgres cluster 127.0.0.1:%d", f.cluster.Port()),
			Inject: func(ctx context.Context, fl nemesis.Fault) (string, error) { return f.cluster.Outage(ctx, fl.For) }})
	}
	return ts
}

// terminate ends every server process serving the World's connections
// (pg_terminate_backend), from a connection of its own straight to the
// server: transactions in flight are rolled back (or, in COMMIT, finish),
// and the pool sees its connections die.
func (f *faults) terminate(ctx context.Context, _ nemesis.Fault) (string, error) {
	ctx, cancel := nemesis.Heal(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, f.direct)
	if err != nil {
		return "", fmt.Errorf("postgres: pg-terminate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, f.app).Scan(&n)
	if err != nil {
		return "", fmt.Errorf("postgres: pg-terminate: %w", err)
	}
	return fmt.Sprintf("%d connections terminated", n), nil
}
