// Package forensics holds pure checkers over recorded data: a run's final
// log, the commit times the worlds observed, and the history of reads and
// appends. No checker talks to a live store.
//
// Definitions, per run:
//   - key order is the scheme's order: byte order of the event id (ulid) or
//     seq (positioned schemes);
//   - an inverted pair is (i, j) with key_i < key_j but commit_i > commit_j;
//     an event is displaced when its rank by key differs from its rank by
//     commit time;
//   - a load is the pages one invocation read until a page said no more; its
//     view is everything that invocation had read so far. A non-prefix read
//     is a load whose view is not exactly the first k events of the final
//     log; a cursor skip is an event that committed behind a cursor a load
//     had already passed, before the load's last page was read (the load
//     could have seen it and never will);
//   - gaps, duplicates and unpositioned events are density violations of a
//     positioned scheme's final log.
package forensics
