package devkitengine

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// at is a time t0 + ms.
func at(ms int) time.Time { return time.UnixMilli(1_700_000_000_000 + int64(ms)) }

// reports are half-second health reports of a host's loop, one ELU each,
// the first ending at at(500).
func reports(elus ...float64) []healthSample {
	var out []healthSample
	for i, e := range elus {
		out = append(out, healthSample{At: at(500 * (i + 1)), Span: 500 * time.Millisecond, ELU: e,
			DelayP99: time.Duration(e*100) * time.Millisecond, CPU: 400 * time.Millisecond, Recording: 10 * time.Millisecond})
	}
	return out
}

// TestHealthOverARunsLife checks what a host's reports say of one run's
// life: only the reports that overlap it count; the share saturated is of
// those; a host that reported nothing in it is no evidence (0 samples,
// never starved).
func TestHealthOverARunsLife(t *testing.T) {
	t.Parallel()
	h := &health{}
	for _, s := range reports(0.2, 0.3, 0.95, 0.99, 1, 0.97, 0.4, 0.1) {
		h.add(s)
	}
	for _, tc := range []struct {
		name        string
		from, to    time.Time
		samples     int
		p50, sat    float64
		starvedIfNo bool
	}{
		{"the whole storm", at(0), at(4000), 8, 0.95, 0.5, true},
		{"the saturated stretch", at(1000), at(3000), 4, 0.99, 1, true},
		{"the quiet start", at(0), at(900), 2, 0.3, 0, false},
		{"before any report", at(-5000), at(-1000), 0, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.over(1, tc.from, tc.to)
			if got.Samples != tc.samples || math.Abs(got.ELUP50-tc.p50) > 1e-9 || math.Abs(got.Saturated-tc.sat) > 1e-9 {
				t.Errorf("over = %+v, want %d samples, p50 %.2f, saturated %.2f", got, tc.samples, tc.p50, tc.sat)
			}
			if got.Host != 1 || got.MachineBusy != -1 {
				t.Errorf("over = %+v: want host 1, machine busy unknown (-1) until the runner fills it", got)
			}
			if got.Starved() != tc.starvedIfNo {
				t.Errorf("Starved() = %v, want %v", got.Starved(), tc.starvedIfNo)
			}
		})
	}
	elu, delay, known := h.recent(at(4000), 1200*time.Millisecond)
	if !known || math.Abs(elu-(0.97+0.4+0.1)/3) > 1e-9 || delay != 97*time.Millisecond {
		t.Errorf("recent = %.3f %s %v, want the last three reports' mean and worst delay", elu, delay, known)
	}
	if _, _, known := h.recent(at(60_000), time.Second); known {
		t.Error("a host silent for a minute reads as known")
	}
	cpu, rec := h.totals()
	if cpu != 8*400*time.Millisecond || rec != 80*time.Millisecond {
		t.Errorf("totals = %s, %s", cpu, rec)
	}
}

// TestHealthNoticeDecodes checks the health notice's fields as the host
// writes them (ms as floats).
func TestHealthNoticeDecodes(t *testing.T) {
	t.Parallel()
	line := `{"notice":"health","at":1700000000500.5,"span":500.2,"elu":0.93,"delayP50":11.1,"delayP99":81.6,"delayMax":120,"cpuUser":380.5,"cpuSystem":19.5,"recordMs":12.25,"deliveries":17,"busyRuns":3}`
	var n healthNotice
	if err := json.Unmarshal([]byte(line), &n); err != nil {
		t.Fatal(err)
	}
	s := n.sample()
	if s.ELU != 0.93 || s.DelayP99 != time.Duration(81.6*float64(time.Millisecond)) || s.CPU != 400*time.Millisecond ||
		s.Recording != 12250*time.Microsecond || s.Deliveries != 17 || s.At.UnixMicro() != 1_700_000_000_500_500 {
		t.Errorf("sample = %+v", s)
	}
}

// TestRunsShareTheirHostsCPU checks that each report's CPU (and its
// recording) is split evenly among the runs live on the host when it
// arrives, that a run on another host gets none of it, and that placement
// takes the host with the fewest live runs.
func TestRunsShareTheirHostsCPU(t *testing.T) {
	t.Parallel()
	h1 := &hostProc{n: 1, health: &health{}, liveRuns: map[*run]bool{}}
	h2 := &hostProc{n: 2, health: &health{}, liveRuns: map[*run]bool{}}
	e := &Engine{hosts: []*hostProc{h1, h2}, runs: map[string]*run{}, placed: map[string]*hostProc{}}
	var placed []int
	for range 3 {
		placed = append(placed, e.place().n)
	}
	if placed[0] != 1 || placed[1] != 2 || placed[2] != 1 {
		t.Errorf("placed on hosts %v, want 1, 2, 1 (the fewest live runs, then the first)", placed)
	}
	a, b, c := &run{host: h1}, &run{host: h1}, &run{host: h2}
	h1.liveRuns[a], h1.liveRuns[b], h2.liveRuns[c] = true, true, true
	e.report(h1, healthSample{At: at(500), Span: 500 * time.Millisecond, CPU: 600 * time.Millisecond, Recording: 30 * time.Millisecond})
	if a.hostCPU != 300*time.Millisecond || b.hostCPU != 300*time.Millisecond || c.hostCPU != 0 || a.recording != 15*time.Millisecond {
		t.Errorf("shares a %s/%s, b %s, c %s: want 300ms/15ms each on host 1, none on host 2", a.hostCPU, a.recording, b.hostCPU, c.hostCPU)
	}
	delete(h1.liveRuns, b)
	e.report(h1, healthSample{At: at(1000), Span: 500 * time.Millisecond, CPU: 200 * time.Millisecond})
	if a.hostCPU != 500*time.Millisecond || b.hostCPU != 300*time.Millisecond {
		t.Errorf("after b ended: a %s, b %s; want a 500ms, b unchanged", a.hostCPU, b.hostCPU)
	}
	e.unplace(h1)
	if h1.live != 1 {
		t.Errorf("host 1 live = %d after an unplace, want 1", h1.live)
	}
	if got := e.Load(); got.Runs != 1 || got.Known {
		t.Errorf("Load = %+v, want the least loaded host (1 live run), not known (no report in the last %s)", got, loadWindow)
	}
}
