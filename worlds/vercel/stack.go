package vercel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/countindex"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
)

// StackConfig configures a Stack.
type StackConfig struct {
	// Addr is where the ingest server listens (empty: 127.0.0.1:0).
	Addr string
	// DynamoEndpoint names DynamoDB Local or AWS (standard credential
	// chain). Empty: an embedded minidyn server on a loopback port.
	DynamoEndpoint string
	// RedisURL names the Redis of the count index. Empty: an embedded
	// miniredis on a loopback port.
	RedisURL string
	// Keep keeps the table(s) and the index's keys when the stack stops
	// (meaningless for the embedded servers, which keep nothing).
	Keep bool
	// Latency and Seed go to the ingest server.
	Latency worlds.Profile
	Seed    uint64
	// OpenTimeout bounds reaching DynamoDB and Redis (0: 5 s).
	OpenTimeout time.Duration
	// Logger receives warnings (nil: discarded).
	Logger *slog.Logger
	// Nemesis opens the stack for fault injection: gates in front of the
	// ingest server and the embedded DynamoDB-API server, a latency proxy
	// in front of the DynamoDB endpoint (which must be on loopback).
	Nemesis bool
}

// Stack is a running ingest server with its DynamoDB store and count index,
// and the embedded servers it started for them.
type Stack struct {
	server *ingest.Server
	store  *dynamo.Store
	index  *countindex.Index
	dyn    *dynamo.Embedded // nil with a DynamoEndpoint
	url    string
	faults stackFaults // with StackConfig.Nemesis
	// keep and redisGiven are StackConfig.Keep and whether it named a
	// RedisURL: what Kept reports.
	keep, redisGiven bool
}

// StartStack starts what an ingest server needs and the server itself: an
// embedded minidyn (unless cfg.DynamoEndpoint), the store's table, the count
// index (embedded miniredis unless cfg.RedisURL), and the server on
// cfg.Addr. An endpoint that cannot be reached fails within a few seconds
// with eventlog.ErrUnavailable. On failure everything started is stopped.
func StartStack(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = 5 * time.Second
	}
	st := &Stack{keep: cfg.Keep, redisGiven: cfg.RedisURL != ""}
	defer func() {
		if err != nil {
			_ = st.Close()
		}
	}()
	dcfg := dynamo.Config{Endpoint: cfg.DynamoEndpoint, Keep: cfg.Keep, OpenTimeout: cfg.OpenTimeout, Logger: cfg.Logger}
	if cfg.DynamoEndpoint == "" {
		if st.dyn, err = dynamo.StartEmbeddedWrapped(st.faults.dynamoGate(cfg)); err != nil {
			return nil, fmt.Errorf("vercel: %w", err)
		}
		// minidyn copies whole tables on every transaction and scans one on
		// every Query: tables per run keep both to the run's size.
		dcfg.Endpoint, dcfg.StaticCredentials, dcfg.TablePerRun, dcfg.Keep = st.dyn.URL(), true, true, false
	}
	if cfg.Nemesis {
		if dcfg.Endpoint, err = st.faults.proxyDynamo(dcfg.Endpoint); err != nil {
			return nil, err
		}
	}
	if st.store, err = dynamo.Open(ctx, dcfg); err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	st.index, err = countindex.Open(ctx, countindex.Config{
		URL: cfg.RedisURL, Namespace: "stormctl:" + st.store.Table(), Keep: cfg.Keep,
		DialTimeout: cfg.OpenTimeout / 3,
	})
	if err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	st.server, err = ingest.New(ingest.Config{Store: st.store, Index: st.index, Latency: cfg.Latency, Seed: cfg.Seed, Logger: cfg.Logger,
		Wrap: st.faults.ingestGate(cfg)})
	if err != nil {
		return nil, fmt.Errorf("vercel: %w", err)
	}
	if st.url, err = st.server.Start(cfg.Addr); err != nil {
		st.server = nil
		return nil, fmt.Errorf("vercel: %w", err)
	}
	return st, nil
}

// Kept says what stays on the servers the stack was given after Close with
// Keep: the DynamoDB table(s) on a DynamoEndpoint and, once a count-index
// run wrote some, the count index's keys on a RedisURL ("" when nothing
// stays: no Keep, embedded servers only, or no key written).
func (st *Stack) Kept() string {
	var kept []string
	if st.keep && st.dyn == nil {
		kept = append(kept, "DynamoDB table "+st.store.Table())
	}
	if st.keep && st.redisGiven && st.index.Wrote() {
		kept = append(kept, "Redis keys "+st.index.Namespace()+":*")
	}
	return strings.Join(kept, " and ")
}

// URL returns the ingest server's base URL.
func (st *Stack) URL() string { return st.url }

// Table returns the name of the store's table (with a table per run, the
// prefix of their names).
func (st *Stack) Table() string { return st.store.Table() }

// Embedded returns the embedded minidyn server, nil with a DynamoEndpoint.
func (st *Stack) Embedded() *dynamo.Embedded { return st.dyn }

// Close stops the ingest server (waiting for requests in flight), deletes
// the table(s) and the index's keys (unless Keep) and stops the embedded
// servers. Nothing it started keeps listening.
func (st *Stack) Close() error {
	var errs []error
	if st.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, st.server.Shutdown(ctx))
		cancel()
	}
	if st.index != nil {
		errs = append(errs, st.index.Close())
	}
	if st.store != nil {
		errs = append(errs, st.store.Close())
	}
	if st.dyn != nil {
		errs = append(errs, st.dyn.Close())
	}
	errs = append(errs, st.faults.close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vercel: stop: %w", err)
	}
	return nil
}
