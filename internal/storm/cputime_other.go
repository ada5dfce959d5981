//go:build !unix

package storm

import "time"

// processCPU is unknown here: every run's share of stormctl's CPU is 0.
func processCPU() time.Duration { return 0 }
