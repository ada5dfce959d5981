// Package plots draws a storm's PNG plots into its directory: the
// corrupted+silent rate per cell with its 95% Wilson interval, the
// mint-to-commit windows per event type, and the commit-order inversions
// and non-prefix reads per cell. summary.md links them.
package plots
