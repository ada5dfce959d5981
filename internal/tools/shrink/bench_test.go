package shrink_test

import (
	"testing"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/shrink"
)

// BenchmarkShrinkStoredRun shrinks the stored storm's corrupted run (the
// input of TestShrinkStoredRun): a measure of schedule.Execute's cost on
// shrink's path, where every candidate re-executes the schedule.
func BenchmarkShrinkStoredRun(b *testing.B) {
	var in *shrink.Input
	for _, x := range storedInputs(b) {
		if x.Outcome == history.Corrupted {
			in = &x
			break
		}
	}
	if in == nil {
		b.Fatalf("%s holds no corrupted run", storedStorm)
	}
	for b.Loop() {
		if _, err := shrink.Shrink(b.Context(), *in, shrink.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
