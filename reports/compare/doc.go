// Package compare compares two storms cell by cell (stormctl compare): for
// the corrupted rate and the corrupted+silent rate, each side's count and
// rate with its Wilson interval, the difference, Fisher's exact p and the
// runs needed, and a verdict per cell (better, worse, no evidence; or a cell
// on one side only). A Comparison prints itself as a table or markdown; its
// JSON is itself.
package compare
