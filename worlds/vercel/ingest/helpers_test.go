package ingest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/oklog/ulid/v2"
	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel/countindex"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
	"github.com/stormctl/stormctl/worlds/vercel/ingest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one ingest server under test on an embedded minidyn and a
// miniredis the test owns (so it can move Redis's clock).
type env struct {
	t     *testing.T
	url   string
	srv   *ingest.Server
	dyn   *dynamo.Embedded
	redis *miniredis.Miniredis
	store *dynamo.Store
}

// newEnv starts the servers with the given latency spec ("" for none).
func newEnv(t *testing.T, latency string) *env {
	t.Helper()
	var lat worlds.Profile
	if latency != "" {
		var err error
		if lat, err = worlds.ParseProfile(latency, 1); err != nil {
			t.Fatal(err)
		}
	}
	return newEnvWith(t, lat)
}

// newEnvWith starts the servers with the given latency profile (nil for
// none).
func newEnvWith(t *testing.T, lat worlds.Profile) *env {
	t.Helper()
	e := &env{t: t}
	var err error
	if e.dyn, err = dynamo.StartEmbedded(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.dyn.Close() })
	e.store, err = dynamo.Open(t.Context(), dynamo.Config{Endpoint: e.dyn.URL(), StaticCredentials: true, TablePerRun: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.store.Close() })
	e.redis = miniredis.NewMiniRedis()
	if err := e.redis.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.redis.Close)
	ix, err := countindex.Open(t.Context(), countindex.Config{URL: "redis://" + e.redis.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	if e.srv, err = ingest.New(ingest.Config{Store: e.store, Index: ix, Latency: lat, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(e.srv)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// answer is an HTTP answer: status and body.
type answer struct {
	status int
	body   []byte
}

// errBody decodes an error answer, failing t unless it is the JSON error
// body every error must carry.
func (a answer) errBody(t *testing.T) ingest.ErrorBody {
	t.Helper()
	var b ingest.ErrorBody
	if err := json.Unmarshal(a.body, &b); err != nil || b.Error == "" || b.Code == "" {
		t.Fatalf("HTTP %d with body %q: want a JSON {error, code} body", a.status, a.body)
	}
	return b
}

// send makes one request with a raw body (nil for none).
func (e *env) send(method, path string, body []byte) answer {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusNoContent && ct != "application/json" {
		e.t.Fatalf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	return answer{resp.StatusCode, data}
}

// post sends v as JSON.
func (e *env) post(path string, v any) answer {
	e.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.send(http.MethodPost, path, b)
}

// createRun creates a run and returns its id.
func (e *env) createRun(s eventlog.Scheme, guard eventlog.Guard) string {
	e.t.Helper()
	id := "wrun_" + ulid.Make().String()
	if a := e.post("/v1/runs", eventlog.Run{ID: id, Scheme: s, Guard: guard}); a.status != http.StatusCreated {
		e.t.Fatalf("create run: HTTP %d %s", a.status, a.body)
	}
	return id
}

// forEachScheme runs f as a subtest for each scheme, on a fresh unguarded
// run of that scheme.
func (e *env) forEachScheme(t *testing.T, f func(t *testing.T, s eventlog.Scheme, run string)) {
	for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq, eventlog.SchemeSlot} {
		t.Run(string(s), func(t *testing.T) {
			e.t = t
			f(t, s, e.createRun(s, ""))
		})
	}
}

// appendFacts posts facts and returns the answer.
func (e *env) appendFacts(run string, d ...eventlog.Draft) answer {
	e.t.Helper()
	return e.post("/v1/runs/"+run+"/events", ingest.AppendRequest{Events: d})
}

// appendFenced posts a fenced batch.
func (e *env) appendFenced(run string, expected int64, d ...eventlog.Draft) answer {
	e.t.Helper()
	return e.post("/v1/runs/"+run+"/events/fenced", ingest.FencedRequest{ExpectedSeq: &expected, Events: d})
}

// mustAppend posts facts that must be accepted.
func (e *env) mustAppend(run string, d ...eventlog.Draft) []eventlog.Event {
	e.t.Helper()
	a := e.appendFacts(run, d...)
	if a.status != http.StatusCreated {
		e.t.Fatalf("append: HTTP %d %s", a.status, a.body)
	}
	var out ingest.EventsResponse
	if err := json.Unmarshal(a.body, &out); err != nil {
		e.t.Fatal(err)
	}
	return out.Events
}

// log reads a run's whole log through the dump endpoint.
func (e *env) log(run string) []eventlog.Event {
	e.t.Helper()
	a := e.send(http.MethodGet, "/v1/runs/"+run+"/dump", nil)
	if a.status != http.StatusOK {
		e.t.Fatalf("dump: HTTP %d %s", a.status, a.body)
	}
	var out ingest.EventsResponse
	if err := json.Unmarshal(a.body, &out); err != nil {
		e.t.Fatal(err)
	}
	return out.Events
}

// guard reads a run's guard answer.
func (e *env) guard(run string) ingest.GuardResponse {
	e.t.Helper()
	a := e.send(http.MethodGet, "/v1/runs/"+run+"/guard", nil)
	if a.status != http.StatusOK {
		e.t.Fatalf("guard: HTTP %d %s", a.status, a.body)
	}
	var out ingest.GuardResponse
	if err := json.Unmarshal(a.body, &out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func draft(t eventlog.Type, corr string) eventlog.Draft {
	return eventlog.Draft{Type: t, CorrelationID: corr, Payload: json.RawMessage(`{"n":1}`)}
}
