package vercel

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/base/flagspec"
	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// The vercel world's endpoint flags: a running ingest server, or the
// DynamoDB and Redis of the ingest server the World starts itself.
var (
	// IngestFlag is --ingest-url (Config.IngestURL).
	IngestFlag = worlds.Endpoint{
		String: flagspec.String{Name: "ingest-url",
			Help:     "running ingest server for the vercel world (default: stormctl starts one on 127.0.0.1)",
			Validate: func(v string) error { return validHTTP("--ingest-url", v) }},
		Server: httpServer,
		// Every kind that acts on the World's own stack needs that stack.
		Nemesis: embeddedOnly("--ingest-url", nemesis.Ingest503, nemesis.DynamoPause, nemesis.RedisDown),
	}
	// DynamoFlag is --dynamo-endpoint (Config.DynamoEndpoint).
	DynamoFlag = worlds.Endpoint{
		String: flagspec.String{Name: "dynamo-endpoint",
			Help:     "DynamoDB endpoint (DynamoDB Local or AWS) for the vercel world (default: an embedded DynamoDB-API server)",
			Validate: func(v string) error { return validHTTP("--dynamo-endpoint", v) }},
		Keeps:   true,
		Server:  httpServer,
		Nemesis: embeddedOnly("--dynamo-endpoint", nemesis.DynamoPause),
		Idle:    behindIngest,
	}
	// RedisFlag is --redis-url (Config.RedisURL).
	RedisFlag = worlds.Endpoint{
		String: flagspec.String{Name: "redis-url",
			Help:     "Redis for the vercel world's count index (default: an embedded Redis-API server)",
			Validate: validRedis},
		Keeps:   true,
		Server:  redisServer,
		Nemesis: embeddedOnly("--redis-url", nemesis.RedisDown),
		Idle: func(given worlds.Values, guards []eventlog.Guard) string {
			if why := behindIngest(given, guards); why != "" {
				return why
			}
			if !slices.Contains(guards, eventlog.GuardCountIndex) {
				return "no vercel cell runs guard=count-index, the only user of Redis, so it is not used (e.g. --condition main/guard=count-index)"
			}
			return ""
		},
	}
)

// Package is the vercel world as stormctl builds it in: every World on
// the endpoints its flags give, or on a stack of its own.
var Package = worlds.Package{Register: func(r *worlds.Registry, s worlds.Setup, logger *slog.Logger) func() error {
	if s.Nemesis {
		quietRedis(logger)
	}
	v := s.Endpoints
	cfg := Config{IngestURL: v[IngestFlag.Name], DynamoEndpoint: v[DynamoFlag.Name], RedisURL: v[RedisFlag.Name], Keep: s.Keep}
	Register(r, func(context.Context) (Config, error) { return cfg, nil })
	return func() error { return nil }
}}

// quietRedis sends the Redis client's own log lines (a Redis the nemesis
// took down makes it log every failed dial) to logger at debug level
// instead of stderr, where they would tear through the progress display.
// go-redis has one logger for the process.
func quietRedis(logger *slog.Logger) {
	redis.SetLogger(redisLog{logger})
}

type redisLog struct{ l *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// behindIngest: with --ingest-url the World opens no store of its own
// (Config), so the flags of those stores are not used.
func behindIngest(given worlds.Values, _ []eventlog.Guard) string {
	if given[IngestFlag.Name] != "" {
		return "the ingest server of --ingest-url has its own stores, so this one is not used"
	}
	return ""
}

// validHTTP checks an http(s) endpoint given with flag.
func validHTTP(flag, v string) error {
	// Hostname, not Host: "http://:8080" has a Host (":8080") and no host
	// name, and a client would dial this machine for it.
	if p, err := url.Parse(v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Hostname() == "" {
		return fmt.Errorf("%s %q: want http://host:port or https://host", flag, redact.String(v))
	}
	return nil
}

// validRedis checks a --redis-url as go-redis reads it.
func validRedis(v string) error {
	if _, err := redis.ParseURL(v); err != nil {
		return fmt.Errorf("--redis-url %q: want redis://[user:password@]host:port[/db] or rediss://...: %s",
			redact.String(v), redact.Text(strings.ReplaceAll(err.Error(), v, redact.String(v)), v))
	}
	return nil
}

// embeddedOnly refuses, under --nemesis, a value of flag off loopback, and
// one given with a kind named that acts on the embedded server it replaces.
func embeddedOnly(flag string, kinds ...nemesis.Kind) func(string, func(nemesis.Kind) bool) error {
	return func(v string, named func(nemesis.Kind) bool) error {
		if err := nemesis.CheckLoopback(flag, v); err != nil {
			return err
		}
		for _, k := range kinds {
			if named(k) {
				return fmt.Errorf("--nemesis %s acts on the vercel world's own embedded servers only: drop %s, or the kind", k, flag)
			}
		}
		return nil
	}
}

// httpServer names the host, port and path of an http(s) URL.
func httpServer(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Host) + "/" + strings.Trim(u.Path, "/")
}

// redisServer names the address and database of a Redis URL.
func redisServer(v string) string {
	o, err := redis.ParseURL(v)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/%d", strings.ToLower(o.Addr), o.DB)
}
