package nemesis

import (
	"cmp"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// Latency faults add between MinDelay and MaxDelay to every chunk a proxy
// forwards (drawn once per fault).
const (
	MinDelay = 50 * time.Millisecond
	MaxDelay = 250 * time.Millisecond
)

// Fault is one planned fault: a kind, on every target of that kind in one
// world, At after the nemesis starts, For long.
type Fault struct {
	// ID numbers the storm's faults from 1 in the order they start.
	ID    int           `json:"id"`
	Kind  Kind          `json:"kind"`
	World string        `json:"world"`
	At    time.Duration `json:"at"`
	// For is the window: how long the target stays broken (0 for an
	// instant kind).
	For time.Duration `json:"for"`
	// Delay is what a latency fault adds to every forwarded chunk.
	Delay time.Duration `json:"delay,omitempty"`
}

// Schedule plans a storm's faults from c and seed. Each world gets its own
// chain: c.Faults faults of every kind it has targets for (available), in a
// seeded order, one after another, each after a quiet gap drawn in
// [Gap/2, 3Gap/2] and lasting [Window/2, Window]. The same config, seed and
// targets always give the same schedule.
func Schedule(c Config, seed uint64, available map[string][]Kind) []Fault {
	c = c.Defaults()
	if !c.On() {
		return nil
	}
	var out []Fault
	for _, world := range slices.Sorted(maps.Keys(available)) {
		var chain []Kind
		for _, k := range Kinds {
			if !slices.Contains(c.Kinds, k) || !slices.Contains(available[world], k) {
				continue
			}
			for range c.Faults {
				chain = append(chain, k)
			}
		}
		rng := rand.New(rand.NewPCG(seed, worldSalt(world)))
		rng.Shuffle(len(chain), func(i, j int) { chain[i], chain[j] = chain[j], chain[i] })
		var t time.Duration
		for _, k := range chain {
			t += between(rng, c.Gap/2, c.Gap*3/2)
			f := Fault{Kind: k, World: world, At: t}
			if !k.Instant() {
				f.For = between(rng, c.Window/2, c.Window)
			}
			if k == Latency {
				f.Delay = between(rng, MinDelay, MaxDelay).Round(time.Millisecond)
			}
			t += f.For
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// between draws a duration in [lo, hi], rounded to milliseconds.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)+1))).Round(time.Millisecond)
}

// worldSalt gives each world's chain its own stream of the seed.
func worldSalt(world string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(world))
	return h.Sum64()
}
