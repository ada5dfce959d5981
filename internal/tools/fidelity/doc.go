// Package fidelity checks whether stormctl's model of the replay engine
// orders its conditions the way the real engine does. It holds a table of
// ordering claims, each resting on published reference numbers (the engine
// team's CI storms, the seed's phase A-C measurements; see DOMAIN.md), and
// judges each claim per world over a storm's summary: pass, fail, or
// unknown when a cell the claim reads is no evidence.
//
// Definitions, per world and cell:
//   - n is a cell's decided runs (reports.Cell.Decided: completed,
//     corrupted, silent, gap, hole); stuck, failed and infra runs decided
//     nothing and are left out of n. A cell with fewer than
//     reports.DefaultMinDecided of its runs decided (or none) is no
//     evidence, as gate has it, and a claim reading it is unknown (a dirty
//     run still fails the clean claims). A claim over cells with runs left
//     out is judged, and its Note says so;
//   - bad is corrupted + silent; a rate is a count over n;
//   - "A cuts B by at least 5x" is B's rate >= 5 x A's rate, compared in
//     integers (bad_B x n_A >= 5 x bad_A x n_B), and needs B > 0: when B did
//     not corrupt there is nothing to cut and the claim fails;
//   - "A is not worse than B" passes unless A's rate is higher and the
//     one-sided Fisher exact test (stats.FisherGreater) gives p < 0.05;
//     "not better" is the same with the direction reversed. Both need
//     B > 0, as the cut does: a shift from 0 proves nothing, and the claim
//     fails.
//
// Nothing here runs a storm or reads a file: Evaluate is a pure function of
// a reports.Summary, so a stored storm can be judged as well as a fresh one.
package fidelity
