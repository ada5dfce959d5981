// Package fidelity checks whether stormctl's model of the replay engine
// orders its conditions the way the real engine does. It holds a table of
// ordering claims, each resting on published reference numbers (the engine
// team's CI storms, the seed's phase A-C measurements; see DOMAIN.md), and
// judges each claim per world over a storm's summary: pass, fail, or
// unknown when a cell the claim reads measured nothing.
//
// Definitions, per world and cell:
//   - n is a cell's runs less its infra runs (an unreachable store measured
//     nothing), as in compare.Compare; stuck and failed runs stay in n and
//     count as not corrupted. A claim over cells with infra or stuck runs is
//     still judged, and its Note says so;
//   - bad is corrupted + silent; a rate is a count over n;
//   - "A cuts B by at least 5x" is B's rate >= 5 x A's rate, compared in
//     integers (bad_B x n_A >= 5 x bad_A x n_B), and needs B > 0: when B did
//     not corrupt there is nothing to cut and the claim fails;
//   - "A is not worse than B" passes unless A's rate is higher and the
//     one-sided Fisher exact test (stats.FisherGreater) gives p < 0.05;
//     "not better" is the same with the direction reversed.
//
// Nothing here runs a storm or reads a file: Evaluate is a pure function of
// a reports.Summary, so a stored storm can be judged as well as a fresh one.
package fidelity
