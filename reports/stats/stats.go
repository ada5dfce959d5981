package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/combin"
	"gonum.org/v1/gonum/stat/distuv"
)

// Significance and power that compare and gate use. **contract**
const (
	Alpha = 0.05 // two-sided significance level
	Power = 0.80 // power wanted when sizing a storm
)

// zQuantile is the standard normal quantile.
func zQuantile(p float64) float64 { return distuv.UnitNormal.Quantile(p) }

// Wilson returns the Wilson score interval of k successes in n trials at
// confidence 1-alpha. For n = 0 it is [0, 1]: nothing was learnt.
func Wilson(k, n int, alpha float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	z := zQuantile(1 - alpha/2)
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}

// FisherExact returns the two-sided p-value of Fisher's exact test on the
// 2x2 table [[a, b], [c, d]]: the probability, with the margins fixed, of a
// table at most as likely as the one observed (hypergeometric, summed in log
// space; ties within a relative 1e-7 count as "as likely").
func FisherExact(a, b, c, d int) float64 {
	return fisher(a, b, c, d, func(lo, hi int, logP func(int) float64) float64 {
		observed := logP(a)
		const tie = 1e-7
		p := 0.0
		for x := lo; x <= hi; x++ {
			if lp := logP(x); lp <= observed+math.Log1p(tie) {
				p += math.Exp(lp)
			}
		}
		return p
	})
}

// FisherGreater returns the one-sided p-value of Fisher's exact test on the
// 2x2 table [[a, b], [c, d]] against the alternative that row 1's rate
// a/(a+b) is greater than row 2's c/(c+d): the probability, with the margins
// fixed, of a top-left count of a or more (hypergeometric, summed in log
// space). Swap the rows to test "less". A table with no runs gives 1.
func FisherGreater(a, b, c, d int) float64 {
	return fisher(a, b, c, d, func(_, hi int, logP func(int) float64) float64 {
		p := 0.0
		for x := a; x <= hi; x++ {
			p += math.Exp(logP(x))
		}
		return p
	})
}

// fisher checks a 2x2 table and sums a tail of its hypergeometric
// distribution: sum gets the range of the top-left count with the margins
// fixed and the log-probability of each count.
func fisher(a, b, c, d int, sum func(lo, hi int, logP func(int) float64) float64) float64 {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return math.NaN()
	}
	row1, row2, col1 := a+b, c+d, a+c
	n := row1 + row2
	if n == 0 {
		return 1
	}
	logTotal := combin.LogGeneralizedBinomial(float64(n), float64(col1))
	logP := func(x int) float64 {
		return combin.LogGeneralizedBinomial(float64(row1), float64(x)) +
			combin.LogGeneralizedBinomial(float64(row2), float64(col1-x)) - logTotal
	}
	return math.Min(1, sum(max(0, col1-row2), min(row1, col1), logP))
}

// RunsNeeded is the number of runs per side needed to detect a difference
// between rates p1 and p2 with a two-sided test at level alpha and the given
// power (normal approximation for two proportions). ok is false when the
// rates are equal: no number of runs detects a difference of 0.
func RunsNeeded(p1, p2, alpha, power float64) (n int, ok bool) {
	d := p1 - p2
	if d == 0 || math.IsNaN(d) {
		return 0, false
	}
	za := zQuantile(1 - alpha/2)
	zb := zQuantile(power)
	pbar := (p1 + p2) / 2
	num := za*math.Sqrt(2*pbar*(1-pbar)) + zb*math.Sqrt(p1*(1-p1)+p2*(1-p2))
	return int(math.Ceil(num * num / (d * d))), true
}
