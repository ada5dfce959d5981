package storm

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// machineCPU samples how busy the machine's CPU is (every core, every
// process: the hosts, the stores, stormctl), from /proc/stat. On a machine
// without it every reading is unknown.
type machineCPU struct {
	read func() (busy, total uint64, err error)

	mu      sync.Mutex
	samples []cpuSample
}

// cpuSample is /proc/stat's aggregate CPU line at one time: jiffies busy
// and in all.
type cpuSample struct {
	at          time.Time
	busy, total uint64
}

// cpuInterval is how often the machine's CPU is sampled.
const cpuInterval = 500 * time.Millisecond

// maxCPUSamples bounds the samples kept (12 hours at cpuInterval).
const maxCPUSamples = 86_400

func newMachineCPU() *machineCPU { return &machineCPU{read: readProcStat} }

// sample reads the machine's CPU once.
func (m *machineCPU) sample(now time.Time) {
	busy, total, err := m.read()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) == maxCPUSamples {
		m.samples = m.samples[maxCPUSamples/10:]
	}
	m.samples = append(m.samples, cpuSample{at: now, busy: busy, total: total})
}

// busy is the machine's busy share (0 to 1 of all its cores) between the
// samples nearest from and to, and whether two samples span it.
func (m *machineCPU) busy(from, to time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first, last *cpuSample
	for i := range m.samples {
		s := &m.samples[i]
		if first == nil && !s.at.Before(from.Add(-cpuInterval)) {
			first = s
		}
		if !s.at.After(to.Add(cpuInterval)) {
			last = s
		}
	}
	if first == nil || last == nil || last.total <= first.total {
		return 0, false
	}
	return float64(last.busy-first.busy) / float64(last.total-first.total), true
}

// recent is the machine's busy share over the last d.
func (m *machineCPU) recent(now time.Time, d time.Duration) (float64, bool) {
	return m.busy(now.Add(-d), now)
}

// readProcStat reads the aggregate "cpu" line of /proc/stat: busy is every
// field but idle and iowait.
func readProcStat() (busy, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		for i, v := range fields[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, nil
	}
	return 0, 0, errors.New("/proc/stat: no cpu line")
}

// selfCPU splits this process's own CPU time (stormctl: the model engine,
// the recording of every operation, the post-run analysis) evenly among
// the runs live in the storm, tick by tick: a run's share is what the
// harness itself spent while it ran. Safe for concurrent use.
type selfCPU struct {
	read func() time.Duration

	mu   sync.Mutex
	last time.Duration
	live map[string]*time.Duration
}

func newSelfCPU() *selfCPU {
	s := &selfCPU{read: processCPU, live: map[string]*time.Duration{}}
	s.last = s.read()
	return s
}

// tick splits the CPU spent since the last tick among the live runs.
func (s *selfCPU) tick() {
	cur := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	delta := cur - s.last
	s.last = cur
	if n := time.Duration(len(s.live)); n > 0 && delta > 0 {
		for _, share := range s.live {
			*share += delta / n
		}
	}
}

// begin counts run id live from now.
func (s *selfCPU) begin(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live[id] = new(time.Duration)
}

// end stops counting run id and returns its share.
func (s *selfCPU) end(id string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	share := s.live[id]
	delete(s.live, id)
	if share == nil {
		return 0
	}
	return *share
}
