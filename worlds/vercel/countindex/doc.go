// Package countindex is the legacy interim guard's side index, in Redis: per
// run, a count of the events the ingest server appended (24 h TTL,
// refreshed on every append) and a window of the last 16 event ids, as
// world-vercel kept them before event_{seq}. It stores and reads; deciding
// what a count means for a write is the ingest server's job.
//
// Keys, under a namespace the Index owns (Config.Namespace):
//
//	<ns>:count:<runId>   string, INCRBY n after each append, EXPIRE TTL
//	<ns>:window:<runId>  list, newest id first, LPUSH + LTRIM to Window, EXPIRE TTL
//
// Without a URL the Index starts an embedded miniredis on 127.0.0.1 and a
// free port, and stops it on Close. Close (and Reset) delete the namespace's
// keys, never anything else, unless Config.Keep.
package countindex
