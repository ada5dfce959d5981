package worlds

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/eventlog"
)

// Profile shapes the window between minting an event's id and committing it.
// It shapes timing only; it never decides whether a write succeeds.
type Profile interface {
	// Delay draws the mint-to-commit window for one write of type t.
	Delay(t eventlog.Type) time.Duration
	// MaxFactDelay bounds the window of any fact write.
	MaxFactDelay() time.Duration
	// String returns the profile's flag spelling.
	String() string
}

// ParseProfile parses a --latency value: "seed", "none" or "fixed:DUR".
func ParseProfile(s string, seed uint64) (Profile, error) {
	switch {
	case s == "none":
		return fixedProfile{name: "none"}, nil
	case s == "seed":
		return newSeedProfile(seed), nil
	case strings.HasPrefix(s, "fixed:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "fixed:"))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("invalid --latency %q: want fixed:DURATION such as fixed:5ms", s)
		}
		return fixedProfile{name: s, d: d}, nil
	}
	return nil, fmt.Errorf("invalid --latency %q (valid: seed, none, fixed:DURATION)", s)
}

type fixedProfile struct {
	name string
	d    time.Duration
}

func (p fixedProfile) Delay(eventlog.Type) time.Duration { return p.d }
func (p fixedProfile) MaxFactDelay() time.Duration       { return p.d }
func (p fixedProfile) String() string                    { return p.name }

// logNormal is a clipped log-normal distribution given by its median.
type logNormal struct {
	median, max time.Duration
	sigma       float64
}

// seedWindows are drawn from the seed's postgres measurements: step_created
// p50 31 ms with a tail to 2 s, hook_received p50 0.4 ms; the other facts sit
// between (an update of the step row plus the insert).
var seedWindows = map[string]logNormal{
	"decision":                    {median: 31 * time.Millisecond, sigma: 1.1, max: 2 * time.Second},
	string(eventlog.HookReceived): {median: 400 * time.Microsecond, sigma: 0.5, max: 5 * time.Millisecond},
	string(eventlog.StepStarted):  {median: 2 * time.Millisecond, sigma: 0.8, max: 50 * time.Millisecond},
	"fact":                        {median: 8 * time.Millisecond, sigma: 1.2, max: 250 * time.Millisecond},
}

type seedProfile struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newSeedProfile(seed uint64) *seedProfile {
	return &seedProfile{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (p *seedProfile) window(t eventlog.Type) logNormal {
	if w, ok := seedWindows[string(t)]; ok {
		return w
	}
	return seedWindows[t.Class()]
}

func (p *seedProfile) Delay(t eventlog.Type) time.Duration {
	w := p.window(t)
	p.mu.Lock()
	z := p.rng.NormFloat64()
	p.mu.Unlock()
	d := time.Duration(float64(w.median) * math.Exp(w.sigma*z))
	return min(d, w.max)
}

func (p *seedProfile) MaxFactDelay() time.Duration {
	var m time.Duration
	for k, w := range seedWindows {
		if k != "decision" {
			m = max(m, w.max)
		}
	}
	return m
}

func (p *seedProfile) String() string { return "seed" }

// Sleep waits for d or until ctx ends, returning ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
