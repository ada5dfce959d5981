// Package bench measures stormctl's PostgreSQL paths against the physical
// limit of the same server, side by side in one invocation:
//
//   - Append: pgbench running the exact SQL the postgres world issues (legacy
//     insert, seq counter + insert, fenced batch of 3) against the world's own
//     write path (World.Append / AppendFenced from as many goroutines as
//     pgbench has clients), one hot run or a random run among many, rounds
//     alternating between the two sides.
//   - Forensics: the bare `SELECT id, pg_xact_commit_timestamp(xmin)` of a
//     large workflow_events table against the full attach-mode forensics of
//     the same rows, with the forensics' peak heap and resident set.
//
// This machine's noise between identical runs is 10-60%, so the results are
// ratios of two sides measured in the same rounds, never absolute targets,
// and no test asserts on a time. The scripts bench/append.sh and
// bench/forensics.sh run `stormctl bench append` and `stormctl bench
// forensics`.
package bench
