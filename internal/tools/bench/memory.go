package bench

import (
	"bufio"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// heapSampler samples the in-use Go heap (objects plus the unused part of
// their spans, what MemStats.HeapInuse counts) every few milliseconds and
// keeps the peak.
type heapSampler struct {
	done chan struct{}
	peak chan uint64
}

var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"}

func startHeapSampler() *heapSampler {
	s := &heapSampler{done: make(chan struct{}), peak: make(chan uint64)}
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, m := range heapMetrics {
		samples[i].Name = m
	}
	read := func() uint64 {
		metrics.Read(samples)
		var sum uint64
		for _, x := range samples {
			if x.Value.Kind() == metrics.KindUint64 {
				sum += x.Value.Uint64()
			}
		}
		return sum
	}
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		peak := read()
		for {
			select {
			case <-s.done:
				s.peak <- max(peak, read())
				return
			case <-t.C:
				peak = max(peak, read())
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak in bytes.
func (s *heapSampler) stop() uint64 {
	close(s.done)
	return <-s.peak
}

// resetPeakRSS resets this process's resident-set high-water mark (VmHWM)
// to its current resident set; where that is not possible it does nothing.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns VmHWM in bytes (0 when /proc cannot tell).
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
