package httpserve_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/httpserve"
)

// TestServe: a started server answers on its URL; Shutdown stops it, a
// second Shutdown returns at once, and nothing is left running.
func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, err := httpserve.Start("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}}
	resp, err := c.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	if string(b) != "ok" {
		t.Fatalf("answered %q", b)
	}
	for i := range 2 {
		if err := s.Shutdown(t.Context()); err != nil {
			t.Fatalf("Shutdown %d: %v", i+1, err)
		}
	}
	if _, err := c.Get(s.URL()); err == nil {
		t.Fatal("still serving after Shutdown")
	}
}
