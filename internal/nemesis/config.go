package nemesis

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Defaults of a Config, sized for a 2-core machine running a storm at its
// default 8 runs in flight: about one fault in four seconds of the storm's
// life, long enough to catch runs mid-write, short enough that most runs
// outlive it.
const (
	DefaultFaults = 3
	DefaultWindow = 3 * time.Second
	DefaultGap    = 10 * time.Second
)

// Bounds of a Config: a nemesis is a bounded disturbance, never an outage.
const (
	MaxFaults = 50
	MinWindow = 100 * time.Millisecond
	MaxWindow = time.Minute
	MaxGap    = 10 * time.Minute
)

// KindList is the --nemesis flag's value: fault kinds, "all" or none. It
// implements pflag.Value.
type KindList []Kind

// String returns the list as the flag spells it.
func (l *KindList) String() string {
	if l == nil || len(*l) == 0 {
		return ""
	}
	if l.All() {
		return "all"
	}
	return kindList(*l)
}

// Set parses a flag value (ParseKinds).
func (l *KindList) Set(s string) error {
	ks, err := ParseKinds(s)
	if err != nil {
		return err
	}
	*l = ks
	return nil
}

// Type names the flag's value in --help.
func (l *KindList) Type() string { return "kinds" }

// All reports whether the list holds every kind ("all").
func (l KindList) All() bool {
	if len(l) != len(Kinds) {
		return false
	}
	for _, k := range Kinds {
		if !slices.Contains(l, k) {
			return false
		}
	}
	return true
}

// Config is a storm's nemesis: which kinds of fault, how many, how long.
// The zero Config is off.
type Config struct {
	// Kinds are the fault kinds; none: no nemesis.
	Kinds KindList `json:"kinds,omitempty"`
	// Faults is how many faults of each kind every world of the storm that
	// the kind applies to gets (0: DefaultFaults).
	Faults int `json:"faults_per_kind,omitempty"`
	// Window bounds each fault's length; a fault lasts between half of it
	// and all of it (0: DefaultWindow).
	Window time.Duration `json:"window,omitempty"`
	// Gap is the mean quiet time before each fault of a world's chain,
	// drawn between half and one and a half times it (0: DefaultGap).
	Gap time.Duration `json:"gap,omitempty"`
}

// On reports whether the nemesis runs.
func (c Config) On() bool { return len(c.Kinds) > 0 }

// Defaults fills the unset bounds of a Config that is on.
func (c Config) Defaults() Config {
	if !c.On() {
		return c
	}
	if c.Faults == 0 {
		c.Faults = DefaultFaults
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Gap == 0 {
		c.Gap = DefaultGap
	}
	return c
}

// Named reports whether the user named kind k one by one (not through
// "all").
func (c Config) Named(k Kind) bool { return !c.Kinds.All() && slices.Contains(c.Kinds, k) }

// Validate checks the bounds, naming the flag at fault, and that every kind
// named one by one (not through "all") applies to one of the storm's
// worlds; offers maps every world there is to the kinds it offers.
func (c Config) Validate(worlds []string, offers map[string][]Kind) error {
	if !c.On() {
		return nil
	}
	switch {
	case c.Faults < 1 || c.Faults > MaxFaults:
		return fmt.Errorf("--nemesis-faults must be in [1, %d], got %d", MaxFaults, c.Faults)
	case c.Window < MinWindow || c.Window > MaxWindow:
		return fmt.Errorf("--nemesis-window must be in [%s, %s], got %s", MinWindow, MaxWindow, c.Window)
	case c.Gap < 0 || c.Gap > MaxGap:
		return fmt.Errorf("--nemesis-gap must be in [0, %s], got %s", MaxGap, c.Gap)
	}
	if c.Kinds.All() {
		return nil
	}
	for _, k := range c.Kinds {
		if !slices.ContainsFunc(worlds, func(w string) bool { return slices.Contains(offers[w], k) }) {
			if len(WorldsOf(k, offers)) == 0 {
				return fmt.Errorf("--nemesis %s: no world offers it", k)
			}
			return fmt.Errorf("--nemesis %s acts on world %s, and this storm has none (--world %s)",
				k, strings.Join(WorldsOf(k, offers), " or "), strings.Join(worlds, ","))
		}
	}
	return nil
}
