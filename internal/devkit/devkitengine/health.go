package devkitengine

import (
	"slices"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/history"
)

// healthSample is one of a host's health notices: how busy it was over the
// span that ended at At (docs/host-protocol.md).
type healthSample struct {
	At   time.Time
	Span time.Duration
	// ELU is the event loop's utilisation over the span (0 to 1).
	ELU float64
	// DelayP99 is the 99th percentile of the loop's delay.
	DelayP99 time.Duration
	// CPU is the process's CPU time over the span (user and system, the
	// thread pool's too); Busy the time its event loop was busy over the
	// span (ELU x Span); Recording the part of Busy that was stormctl's own
	// recording (both wall time of the loop's thread, so their ratio holds
	// however contended the machine is).
	CPU, Busy, Recording time.Duration
	// Deliveries counts the queue deliveries in flight at At.
	Deliveries int
}

// healthNotice is a health notice as the host writes it.
type healthNotice struct {
	At         float64 `json:"at"`
	Span       float64 `json:"span"`
	ELU        float64 `json:"elu"`
	DelayP99   float64 `json:"delayP99"`
	CPUUser    float64 `json:"cpuUser"`
	CPUSystem  float64 `json:"cpuSystem"`
	RecordMs   float64 `json:"recordMs"`
	Deliveries int     `json:"deliveries"`
}

// sample is the notice as a healthSample.
func (n healthNotice) sample() healthSample {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return healthSample{At: msTime(n.At), Span: ms(n.Span), ELU: n.ELU, DelayP99: ms(n.DelayP99),
		CPU: ms(n.CPUUser + n.CPUSystem), Busy: ms(n.ELU * n.Span), Recording: ms(n.RecordMs), Deliveries: n.Deliveries}
}

// maxSamples bounds the samples a health keeps: 12 hours of half-second
// reports, far past any storm.
const maxSamples = 86_400

// health is one host's reports, oldest first. Safe for concurrent use.
type health struct {
	mu      sync.Mutex
	samples []healthSample
	// cpu and recording sum every sample's, kept when old samples go.
	cpu, recording time.Duration
}

// add keeps one report.
func (h *health) add(s healthSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) == maxSamples {
		h.samples = slices.Delete(h.samples, 0, maxSamples/10)
	}
	h.samples = append(h.samples, s)
	h.cpu += s.CPU
	h.recording += s.Recording
}

// recent is the host's load over the last d: the mean utilisation of the
// reports that ended in it, the worst loop delay, and whether any report
// fell in it (a host that reported nothing lately is not known to be idle).
func (h *health) recent(now time.Time, d time.Duration) (elu float64, delay time.Duration, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var sum float64
	n := 0
	for i := len(h.samples) - 1; i >= 0 && now.Sub(h.samples[i].At) <= d; i-- {
		s := h.samples[i]
		sum += s.ELU
		delay = max(delay, s.DelayP99)
		n++
	}
	if n == 0 {
		return 0, 0, false
	}
	return sum / float64(n), delay, true
}

// over is what the host's reports say of the span [from, to], one run's
// life: the utilisation's median and 99th percentile, the share of
// reports at history.SaturatedELU or more, and the worst loop delay.
func (h *health) over(host int, from, to time.Time) history.Harness {
	h.mu.Lock()
	var elus []float64
	var delay time.Duration
	saturated := 0
	for _, s := range h.samples {
		// A report covers (At-Span, At]: it counts when that overlaps the
		// span by more than a point.
		if !s.At.After(from) || !s.At.Add(-s.Span).Before(to) {
			continue
		}
		elus = append(elus, s.ELU)
		delay = max(delay, s.DelayP99)
		if s.ELU >= history.SaturatedELU {
			saturated++
		}
	}
	h.mu.Unlock()
	out := history.Harness{Host: host, Samples: len(elus), DelayP99Ms: float64(delay) / float64(time.Millisecond), MachineBusy: -1}
	if len(elus) == 0 {
		return out
	}
	slices.Sort(elus)
	out.ELUP50 = quantile(elus, 0.5)
	out.ELUP99 = quantile(elus, 0.99)
	out.Saturated = float64(saturated) / float64(len(elus))
	return out
}

// totals are the host's CPU time and its recording's, over every report.
func (h *health) totals() (cpu, recording time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpu, h.recording
}

// quantile is the q-quantile of sorted xs (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}
