package vercel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stormctl/stormctl/internal/nemesis"
)

var _ nemesis.Targeter = (*World)(nil)

// stackFaults is a Stack's fault plumbing under StackConfig.Nemesis.
type stackFaults struct {
	ingest      *nemesis.Gate  // in front of the ingest server's handler
	dynamo      *nemesis.Gate  // in front of the embedded DynamoDB-API server
	dynamoProxy *nemesis.Proxy // between the store and its endpoint
}

// ingestGate returns the wrap that puts a gate in front of the ingest
// server (nil without the nemesis).
func (f *stackFaults) ingestGate(cfg StackConfig) func(http.Handler) http.Handler {
	if !cfg.Nemesis {
		return nil
	}
	return func(h http.Handler) http.Handler {
		f.ingest = nemesis.NewGate(h, cfg.Seed)
		return f.ingest
	}
}

// dynamoGate returns the wrap that puts a gate in front of the embedded
// DynamoDB-API server (nil without the nemesis).
func (f *stackFaults) dynamoGate(cfg StackConfig) func(http.Handler) http.Handler {
	if !cfg.Nemesis {
		return nil
	}
	return func(h http.Handler) http.Handler {
		f.dynamo = nemesis.NewGate(h, cfg.Seed+1)
		return f.dynamo
	}
}

// proxyDynamo starts a proxy in front of a loopback DynamoDB endpoint and
// returns the endpoint to use instead.
func (f *stackFaults) proxyDynamo(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("vercel: --nemesis: DynamoDB endpoint %q: want http://host:port", endpoint)
	}
	if f.dynamoProxy, err = nemesis.NewProxy(u.Host); err != nil {
		return "", fmt.Errorf("vercel: %w", err)
	}
	u.Host = f.dynamoProxy.Addr()
	return u.String(), nil
}

func (f *stackFaults) close() error {
	if f.dynamoProxy != nil {
		return f.dynamoProxy.Close()
	}
	return nil
}

// proxyIngest puts a latency proxy between the client and the ingest
// server (Config.Nemesis); the server must be on loopback.
func (w *World) proxyIngest(cfg Config) error {
	if !cfg.Nemesis {
		return nil
	}
	u, err := url.Parse(w.base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("vercel: --nemesis: ingest URL %q: want http://host:port", w.base)
	}
	if u.Scheme != "http" {
		return errors.New("vercel: --nemesis: the ingest server must speak plain http on loopback")
	}
	if w.proxy, err = nemesis.NewProxy(u.Host); err != nil {
		return fmt.Errorf("vercel: %w", err)
	}
	u.Host = w.proxy.Addr()
	w.base = strings.TrimRight(u.String(), "/")
	return nil
}

func (w *World) closeProxy() {
	if w.proxy != nil {
		_ = w.proxy.Close()
	}
}

// Targets implements nemesis.Targeter: latency on the proxies in front of
// the ingest server and the DynamoDB endpoint; with the World's own stack,
// ingest-503 on its ingest server; with the embedded DynamoDB-API server,
// dynamo-pause; with the embedded Redis, redis-down. A World opened
// without the nemesis has none.
func (w *World) Targets() []nemesis.Target {
	if w.proxy == nil {
		return nil
	}
	ts := []nemesis.Target{w.proxy.Target("ingest server")}
	st := w.stack
	if st == nil {
		return ts
	}
	f := st.faults
	if f.dynamoProxy != nil {
		ts = append(ts, f.dynamoProxy.Target("DynamoDB endpoint"))
	}
	if f.ingest != nil {
		ts = append(ts, f.ingest.FailTarget(nemesis.Ingest503, "ingest server "+st.URL()))
	}
	if f.dynamo != nil {
		ts = append(ts, f.dynamo.HoldTarget(nemesis.DynamoPause, "DynamoDB-API server "+st.dyn.URL()))
	}
	if st.index.Embedded() {
		ix := st.index
		ts = append(ts, nemesis.Target{Kind: nemesis.RedisDown, Name: "Redis " + ix.Addr(),
			Inject: func(ctx context.Context, f nemesis.Fault) (string, error) {
				return "", ix.Outage(ctx, f.For)
			}})
	}
	return ts
}
