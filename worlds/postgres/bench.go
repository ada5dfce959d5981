package postgres

import (
	"context"
	"os"
	"path/filepath"
)

// WriteSQL is the exact SQL text a World's write path sends, rendered for
// one schema, so that a benchmark (bench/, `stormctl bench append`) can hand
// the same statements to pgbench. The parameters of the three inserts are:
// $1 the run id; $2 … $9 one array element per draft: ids (text[]), types,
// correlation ids, payloads (JSON text, "" for none), hook tokens, dedup
// values, idempotency keys (all text[]) and mint times (timestamptz[]).
type WriteSQL struct {
	// Events is the schema-qualified, quoted name of the World's
	// workflow_events table.
	Events string
	// LegacyInsert is the ulid scheme's insert (World.Append on a ulid run):
	// one INSERT … SELECT FROM unnest, client-minted ids, no counter.
	LegacyInsert string
	// SeqInsert is the seq scheme's unfenced append: the counter row's
	// UPDATE … RETURNING feeding the inserts, one statement.
	SeqInsert string
	// SeqFenced is the seq scheme's fenced append (World.AppendFenced, fence
	// basis FenceOnLog): SeqInsert whose UPDATE also requires next_seq = $10.
	SeqFenced string
	// Counters reads a seq run's next_seq and last_fenced_seq ($1 the run
	// id); the World issues it after a fenced append was rejected.
	Counters string
}

// WriteStatements returns the write SQL of a World whose schema is schema
// (World.Schema()).
func WriteStatements(schema string) WriteSQL {
	q := newQueries(schema, false)
	return WriteSQL{
		Events:       q.events,
		LegacyInsert: q.insertULID,
		SeqInsert:    q.insertSeq,
		SeqFenced:    q.insertSeqFenced,
		Counters:     q.counters,
	}
}

// BinDir returns the directory of the cluster's server binaries (initdb's,
// symbolic links resolved), where the client tools of the same version, such
// as pgbench, live too.
func (c *Cluster) BinDir() string { return resolvedDir(c.bin.initdb) }

// ServerBinDir finds the PostgreSQL server binaries the way StartEmbedded
// does and returns their directory (symbolic links resolved); without them it
// fails with ErrNoPostgres.
func ServerBinDir() (string, error) {
	b, err := findBinaries(os.Getenv("PATH"), binDirGlobs)
	if err != nil {
		return "", err
	}
	return resolvedDir(b.initdb), nil
}

func resolvedDir(bin string) string {
	if p, err := filepath.EvalSymlinks(bin); err == nil {
		bin = p
	}
	return filepath.Dir(bin)
}

// Counters reads a seq run's next_seq and last_fenced_seq with
// WriteSQL.Counters, through the World's own pool: the position a
// benchmark's fenced writer expects, read the way the World reads (the
// engine instead counts the events its load returned).
func (w *World) Counters(ctx context.Context, runID string) (next, lastFenced int64, err error) {
	if err := w.pool.QueryRow(ctx, w.q.counters, runID).Scan(&next, &lastFenced); err != nil {
		return 0, 0, storeErr(ctx, "read the counters of run "+runID, err)
	}
	return next, lastFenced, nil
}
