package cli

import (
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile into path (nothing when path is
// empty) and returns the function that stops it.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usage("--cpu-profile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, usage("--cpu-profile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
