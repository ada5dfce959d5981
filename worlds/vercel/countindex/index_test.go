package countindex_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/countindex"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestIndex: counts and windows per run, TTL expiry, and a namespace that
// Close empties without touching anyone else's keys.
func TestIndex(t *testing.T) {
	ctx := t.Context()
	mr := miniredis.RunT(t)
	if err := mr.Set("someone:else", "precious"); err != nil {
		t.Fatal(err)
	}
	ix, err := countindex.Open(ctx, countindex.Config{URL: "redis://" + mr.Addr(), Namespace: "stormctl:test", Window: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ix.Count(ctx, "r1"); ok || err != nil {
		t.Fatalf("Count of an unknown run: ok %v, %v", ok, err)
	}
	if err := ix.Start(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := ix.Count(ctx, "r1"); n != 0 || !ok || err != nil {
		t.Fatalf("Count after Start = %d, %v, %v", n, ok, err)
	}
	for _, ids := range [][]string{{"e1"}, {"e2", "e3"}, {"e4", "e5", "e6"}} {
		if err := ix.Record(ctx, "r1", ids); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Start(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := ix.Count(ctx, "r1"); n != 6 {
		t.Fatalf("Count = %d after 6 events (a second Start must not reset it)", n)
	}
	if w, _ := ix.Window(ctx, "r1"); !slices.Equal(w, []string{"e6", "e5", "e4", "e3"}) {
		t.Fatalf("Window = %v, want the 4 newest, newest first", w)
	}
	if after, found, _ := ix.Locate(ctx, "r1", "e4"); !found || after != 2 {
		t.Fatalf("Locate(e4) = %d, %v; want 2 ids after it", after, found)
	}
	if _, found, _ := ix.Locate(ctx, "r1", "e1"); found {
		t.Fatal("e1 is still located after leaving the window")
	}
	if ttl := mr.TTL("stormctl:test:count:r1"); ttl != countindex.DefaultTTL {
		t.Fatalf("count TTL %s, want %s", ttl, countindex.DefaultTTL)
	}
	mr.FastForward(countindex.DefaultTTL + time.Second)
	if _, ok, _ := ix.Count(ctx, "r1"); ok {
		t.Fatal("the count outlived its TTL")
	}
	if err := ix.Record(ctx, "r1", []string{"e7"}); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := ix.Count(ctx, "r1"); n != 1 {
		t.Fatalf("after expiry the count restarts short: %d, want 1", n)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if keys := mr.Keys(); !slices.Equal(keys, []string{"someone:else"}) {
		t.Fatalf("keys after Close: %v, want only the foreign key", keys)
	}
}

// TestEmbeddedAndUnreachable: without a URL the index runs its own
// miniredis; a Redis that is gone is ErrUnavailable.
func TestEmbeddedAndUnreachable(t *testing.T) {
	ix, err := countindex.Open(t.Context(), countindex.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Record(t.Context(), "r", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	mr := miniredis.RunT(t)
	ix, err = countindex.Open(t.Context(), countindex.Config{URL: "redis://" + mr.Addr(), DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	mr.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, _, err := ix.Count(ctx, "r"); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("Count with Redis gone = %v, want ErrUnavailable", err)
	}
	if _, err := countindex.Open(t.Context(), countindex.Config{URL: "redis://x:y:z"}); err == nil {
		t.Fatal("a malformed URL was accepted")
	}
}
