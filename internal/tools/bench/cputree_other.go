//go:build !unix

package bench

import "time"

// processTreeCPU is unknown here (0): CPU-s a run reads 0.
func processTreeCPU() time.Duration { return 0 }
