package stats_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/reports/stats"
)

// fixtureRows reads a whitespace-separated fixture, skipping blank lines and
// # comments, and returns each row's fields with its line number.
func fixtureRows(t *testing.T, name string) (rows [][]string, lines []int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range texttest.Lines(string(b)) {
		rows = append(rows, l.Words)
		lines = append(lines, l.N)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no rows", name)
	}
	return rows, lines
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// near compares with a relative tolerance (absolute near 0).
func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-12)
}

// eachFisherRow runs a subtest per row "a b c d p" of a fisher fixture:
// it checks that f(a, b, c, d) is p, then hands the row to more.
func eachFisherRow(t *testing.T, file, name string, f func(a, b, c, d int) float64,
	more func(t *testing.T, at string, a, b, c, d int, want float64)) {
	rows, lines := fixtureRows(t, file)
	for i, r := range rows {
		t.Run(strings.Join(r[:4], " "), func(t *testing.T) {
			t.Parallel()
			at := fmt.Sprintf("%s:%d", file, lines[i])
			a, b, c, d := atoi(t, r[0]), atoi(t, r[1]), atoi(t, r[2]), atoi(t, r[3])
			want := atof(t, r[4])
			if got := f(a, b, c, d); !near(got, want, 1e-6) {
				t.Errorf("%s: %s(%d, %d, %d, %d) = %.10g, want %.10g", at, name, a, b, c, d, got, want)
			}
			more(t, at, a, b, c, d, want)
		})
	}
}

func TestFisherExact(t *testing.T) {
	t.Parallel()
	eachFisherRow(t, "fisher.txt", "FisherExact", stats.FisherExact, func(t *testing.T, at string, a, b, c, d int, want float64) {
		// The test is symmetric in rows and in columns.
		if got := stats.FisherExact(c, d, a, b); !near(got, want, 1e-6) {
			t.Errorf("%s: rows swapped: %.10g, want %.10g", at, got, want)
		}
		if got := stats.FisherExact(b, a, d, c); !near(got, want, 1e-6) {
			t.Errorf("%s: columns swapped: %.10g, want %.10g", at, got, want)
		}
	})
}

func TestWilson(t *testing.T) {
	t.Parallel()
	rows, lines := fixtureRows(t, "wilson.txt")
	for i, r := range rows {
		t.Run(r[0]+"/"+r[1], func(t *testing.T) {
			t.Parallel()
			k, n := atoi(t, r[0]), atoi(t, r[1])
			lo, hi := stats.Wilson(k, n, stats.Alpha)
			if wlo, whi := atof(t, r[2]), atof(t, r[3]); math.Abs(lo-wlo) > 1e-7 || math.Abs(hi-whi) > 1e-7 {
				t.Errorf("wilson.txt:%d: Wilson(%d, %d) = [%.10f, %.10f], want [%.10f, %.10f]", lines[i], k, n, lo, hi, wlo, whi)
			}
			if n > 0 {
				if p := float64(k) / float64(n); lo > p || hi < p {
					t.Errorf("interval [%g, %g] does not hold the rate %g", lo, hi, p)
				}
			}
		})
	}
}

func TestRunsNeeded(t *testing.T) {
	t.Parallel()
	rows, lines := fixtureRows(t, "runs-needed.txt")
	for i, r := range rows {
		t.Run(r[0]+"-"+r[1], func(t *testing.T) {
			t.Parallel()
			p1, p2 := atof(t, r[0]), atof(t, r[1])
			n, ok := stats.RunsNeeded(p1, p2, stats.Alpha, stats.Power)
			if r[2] == "-" {
				if ok {
					t.Errorf("runs-needed.txt:%d: RunsNeeded(%g, %g) = %d, want none", lines[i], p1, p2, n)
				}
				return
			}
			if want := atoi(t, r[2]); !ok || n != want {
				t.Errorf("runs-needed.txt:%d: RunsNeeded(%g, %g) = %d, %v; want %d", lines[i], p1, p2, n, ok, want)
			}
			if m, _ := stats.RunsNeeded(p2, p1, stats.Alpha, stats.Power); m != n {
				t.Errorf("not symmetric: %d one way, %d the other", n, m)
			}
		})
	}
}

func TestFisherGreater(t *testing.T) {
	t.Parallel()
	eachFisherRow(t, "fisher-greater.txt", "FisherGreater", stats.FisherGreater, func(t *testing.T, at string, a, b, c, d int, _ float64) {
		// "Row 1's rate is lower" is the same tail as "row 2's is
		// greater" (swap the rows) and as "row 1's other column is
		// greater" (swap the columns).
		if cols, rows := stats.FisherGreater(b, a, d, c), stats.FisherGreater(c, d, a, b); !near(cols, rows, 1e-9) {
			t.Errorf("%s: columns swapped %.10g, rows swapped %.10g: want equal", at, cols, rows)
		}
	})
}
