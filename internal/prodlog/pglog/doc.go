// Package pglog reads one run's event log from a database written by the
// published @workflow/world-postgres, read-only, as the package's own
// events.list gives it: the rows of <schema>.workflow_events of the run,
// ordered by id (the package's ORDER BY, under the database's collation),
// each row's eventData the CBOR of its payload_cbor column (the JSON of its
// legacy payload column when that is empty), and the workflow the run's
// workflow_runs row names. Events come back as stormctl's, through the
// devkit worlds' own mapping (devkit.EventOf), so that a log stormctl's
// model wrote through the package reads back as it was written.
//
// It never writes: both queries run in one READ ONLY transaction.
package pglog
