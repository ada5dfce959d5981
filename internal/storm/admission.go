package storm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/engines"
)

// Admission modes (--admission, storm.json's config.admission).
const (
	// AdmissionAuto starts a run of an engine that says how busy it is
	// (Loader: the devkit engine's host processes) only while there is
	// room (AdmissionRule); other engines' runs start as --runs-in-flight
	// allows.
	AdmissionAuto = "auto"
	// AdmissionOff starts every run as --runs-in-flight allows: for
	// experiments, such as driving a host into starvation on purpose.
	AdmissionOff = "off"
)

// AdmissionModes lists the admission modes.
func AdmissionModes() []string { return []string{AdmissionAuto, AdmissionOff} }

// AdmissionRule is when a run of a loaded engine starts under
// AdmissionAuto: once the run admitted before it (of any loaded engine)
// has had Ramp to show its load, while the host the run would go to
// reported a loop utilisation below MaxBusy over the last Window, and the
// machine's CPU was busy below MaxMachine of all its cores over it. A run
// starts whatever the load when no run of a loaded engine is in flight:
// the storm always makes progress. --runs-in-flight stays the upper
// bound. The values were read off the 1/2/4/8-in-flight benchmark
// (docs/results/2026-12-06-bench-devkit.md).
type AdmissionRule struct {
	Ramp       time.Duration `json:"ramp"`
	Window     time.Duration `json:"window"`
	MaxBusy    float64       `json:"max_busy"`
	MaxMachine float64       `json:"max_machine"`
}

// DefaultAdmissionRule is AdmissionAuto's rule.
var DefaultAdmissionRule = AdmissionRule{Ramp: 4 * time.Second, Window: 3 * time.Second, MaxBusy: 0.6, MaxMachine: 0.85}

// String says the rule in words, for storm.json and the logs.
func (r AdmissionRule) String() string {
	return fmt.Sprintf("a run starts %s after the last one, while its host's loop was busy below %.0f%% and the machine's CPU below %.0f%% over the last %s",
		r.Ramp, 100*r.MaxBusy, 100*r.MaxMachine, r.Window)
}

// admission holds back the runs of loaded engines until there is room for
// them (AdmissionRule). Safe for concurrent use.
type admission struct {
	rule AdmissionRule
	off  bool
	cpu  *machineCPU
	// poll is how often a waiting run looks again.
	poll time.Duration

	mu sync.Mutex
	// last is when the last run of a loaded engine was admitted, live how
	// many such runs are in flight.
	last time.Time
	live int
	// waited sums the time runs waited to be admitted, held the runs that
	// waited at all.
	waited time.Duration
	held   int
}

// wait blocks until a run of eng may start, or ctx ends. It returns the
// function to call when the run has ended.
func (a *admission) wait(ctx context.Context, eng engines.Engine) (done func(), err error) {
	l, loaded := eng.(engines.Loader)
	if !loaded {
		return func() {}, nil
	}
	began := time.Now()
	t := time.NewTicker(a.pollEvery())
	defer t.Stop()
	held := false
	for {
		if a.admit(time.Now(), l) {
			break
		}
		held = true
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	a.mu.Lock()
	if held { // refused at least once: a slow first look is no wait
		a.waited += time.Since(began)
		a.held++
	}
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		a.live--
		a.mu.Unlock()
	}, nil
}

func (a *admission) pollEvery() time.Duration {
	if a.poll > 0 {
		return a.poll
	}
	return 250 * time.Millisecond
}

// admit says whether a run of l's engine starts now, and counts it when it
// does.
func (a *admission) admit(now time.Time, l engines.Loader) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.off && a.live > 0 && !a.room(now, l) {
		return false
	}
	a.last = now
	a.live++
	return true
}

// room says whether the rule has room for one more run of l's engine now
// (a.mu held).
func (a *admission) room(now time.Time, l engines.Loader) bool {
	r := a.rule
	if now.Sub(a.last) < r.Ramp {
		return false
	}
	load := l.Load()
	if !load.Known || load.Busy >= r.MaxBusy {
		return false
	}
	if a.cpu != nil {
		if busy, ok := a.cpu.recent(now, r.Window); ok && busy >= r.MaxMachine {
			return false
		}
	}
	return true
}

// held is how many runs waited to be admitted and how long in all.
func (a *admission) heldBack() (runs int, waited time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held, a.waited
}
