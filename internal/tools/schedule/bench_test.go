package schedule_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/tools/schedule"
)

// BenchmarkExecuteMemo executes, as shrink executes its candidates (a
// Memo shared, leniently), a schedule of n invocations that each read
// the log and write: the cost of building each writer's view as the
// history grows.
func BenchmarkExecuteMemo(b *testing.B) {
	step := func(c *engine.Ctx) (any, error) { return c.Await(c.Step("x", 0)) }
	for _, n := range []int{250, 1000, 4000} {
		var t strings.Builder
		t.WriteString("scheme ulid\noutcome corrupted\nstart e00001 at=0\n")
		for k := 1; k <= n; k++ {
			fmt.Fprintf(&t, "list inv-%d after=- at=%d read=e00001\nwrite inv-%d - at=%d\n", k, 2*k, k, 2*k+1)
		}
		s, err := schedule.Parse(t.String())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			opts := schedule.Options{Program: step, Lenient: true, Memo: &schedule.Memo{}}
			for b.Loop() {
				if _, err := s.Execute(opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
