// Package comment renders the pull-request comment of a stored storm
// (stormctl comment): the storm's tables, the verdicts of the gates run on
// it, its comparison with the base branch's storm, its wrong runs by
// root-cause class with the paths of their timelines, and the pull
// request's last storms, a row each.
//
// The history rides in the comment itself, as a hidden HTML comment of
// JSON rows (ParseHistory reads it back from the previous comment, which
// is untrusted input: anything it cannot vouch for is an error, and the
// caller starts a fresh history). The tables, comparison and gate lines are
// the report, compare and gate packages' own.
package comment
