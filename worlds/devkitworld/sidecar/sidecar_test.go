package sidecar

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/nodetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeCheckout lays out a checkout's two packages under a temp dir, built
// (dist/index.js) or not.
func fakeCheckout(t *testing.T, built bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"world-local", "world-postgres"} {
		pkg := filepath.Join(dir, "packages", p)
		if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@workflow/`+p+`","version":"0.0.0-checkout"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if built {
			if err := os.WriteFile(filepath.Join(pkg, "dist", "index.js"), []byte("export {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestCheckoutLayout(t *testing.T) {
	dir := fakeCheckout(t, true)
	l, err := CheckoutLayout(dir)
	if err != nil {
		t.Fatalf("CheckoutLayout(built checkout): %v", err)
	}
	if l.Local != filepath.Join(dir, "packages", "world-local") || l.Postgres != filepath.Join(dir, "packages", "world-postgres") || l.Source != dir {
		t.Fatalf("CheckoutLayout = %+v", l)
	}
	_, err = CheckoutLayout(fakeCheckout(t, false))
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), filepath.Join("world-local", "dist", "index.js")) {
		t.Fatalf("CheckoutLayout(unbuilt checkout) = %v; want %v naming the missing dist/index.js", err, ErrNotBuilt)
	}
}

func TestIDOf(t *testing.T) {
	for _, tt := range []struct {
		line string
		id   int64
		ok   bool
	}{
		{`{"id":42,"result":{}}`, 42, true},
		{`{"id":0,"error":{"name":"Error"}}`, 0, true},
		{`{"result":{},"id":4}`, 0, false},
		{`{"id":"4"}`, 0, false},
	} {
		if id, ok := idOf([]byte(tt.line)); id != tt.id || ok != tt.ok {
			t.Errorf("idOf(%s) = %d, %v; want %d, %v", tt.line, id, ok, tt.id, tt.ok)
		}
	}
}

// TestProcess runs the real script against a fake checkout: it answers by
// id, reports a failing request as an *Error, and is gone after Stop.
func TestProcess(t *testing.T) {
	nodetest.Need(t, "node")
	l, err := Checkout(t.Context(), fakeCheckout(t, true), t.TempDir())
	if errors.Is(err, ErrNoNode) {
		nodetest.Skip(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(l)
	if err != nil {
		t.Fatal(err)
	}
	var hello struct {
		Versions map[string]string `json:"versions"`
	}
	if err := p.Call(t.Context(), "hello", nil, &hello); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if got := hello.Versions["@workflow/world-local"]; got != "0.0.0-checkout" {
		t.Fatalf("hello: versions %v, want the checkout's @workflow/world-local 0.0.0-checkout", hello.Versions)
	}
	var se *Error
	if err := p.Call(t.Context(), "list", map[string]any{"handle": 99}, nil); !errors.As(err, &se) || !strings.Contains(se.Message, "unknown handle") {
		t.Fatalf("list on an unknown handle = %v; want an *Error saying so", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Call(ctx, "hello", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call whose context ended = %v; want %v", err, context.Canceled)
	}
	pid := p.PID()
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the sidecar (pid %d) still runs after Stop: kill 0 = %v", pid, err)
	}
	if err := p.Call(t.Context(), "hello", nil, nil); !errors.Is(err, ErrExited) {
		t.Fatalf("a call after Stop = %v; want %v", err, ErrExited)
	}
}

// TestStartCommandNotices: a script's notice lines reach Command.Notice in
// the order written, and its answers still reach their requests.
func TestStartCommandNotices(t *testing.T) {
	nodetest.Need(t, "node")
	script, err := WriteScript(t.TempDir(), "echo.mjs", []byte(`
import fs from 'node:fs';
import readline from 'node:readline';
const out = fs.createWriteStream(null, { fd: 3 });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const req = JSON.parse(line);
  out.write(JSON.stringify({ notice: 'op', n: 1 }) + '\n');
  out.write(JSON.stringify({ notice: 'op', n: 2 }) + '\n');
  out.write(JSON.stringify({ id: req.id, result: { echo: req.op } }) + '\n');
}
`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	p, err := StartCommand(Command{Script: script, Dir: t.TempDir(), Notice: func(line []byte) {
		mu.Lock()
		notices = append(notices, string(line))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var got struct {
		Echo string `json:"echo"`
	}
	if err := p.Call(t.Context(), "ping", nil, &got); err != nil || got.Echo != "ping" {
		t.Fatalf("ping = %+v, %v; want the echo", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`{"notice":"op","n":1}`, `{"notice":"op","n":2}`}
	if !slices.Equal(notices, want) {
		t.Fatalf("notices %q, want %q", notices, want)
	}
}
