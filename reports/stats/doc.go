// Package stats is the statistics compare, gate, fidelity and the plots
// use: Wilson score intervals of a rate, Fisher's exact test (two-sided and
// one-sided), and the runs per cell needed to detect a difference of two
// rates, at the significance and power the reports promise (Alpha, Power).
package stats
