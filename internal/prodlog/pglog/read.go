package pglog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/eventlog/pgconnect"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// Options say which run to read, and where.
type Options struct {
	URL    string
	Schema string // default "workflow"
	RunID  string
}

// Read reads run o.RunID's log. A server that does not answer wraps
// eventlog.ErrUnavailable; missing tables are prodlog.ErrNoTable, a run not there
// prodlog.ErrNoRun; a row that does not decode is an error naming its event.
func Read(ctx context.Context, o Options) (prodlog.Log, error) {
	if o.Schema == "" {
		o.Schema = "workflow"
	}
	log := prodlog.Log{RunID: o.RunID, Source: redact.Server(o.URL), World: devkitworld.PostgresName}
	conn, err := pgconnect.Connect(ctx, o.URL)
	if err != nil {
		return log, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return log, eventlog.Unavailable("begin a read-only transaction", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	events := pgx.Identifier{o.Schema, "workflow_events"}.Sanitize()
	runs := pgx.Identifier{o.Schema, "workflow_runs"}.Sanitize()
	for _, t := range []string{"workflow_events", "workflow_runs"} {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{o.Schema, t}.Sanitize()).Scan(&ok); err != nil {
			return log, eventlog.Unavailable("look for "+t, err)
		}
		if !ok {
			return log, fmt.Errorf("%s: %w (is --schema right? the Workflow DevKit default is \"workflow\")", pgx.Identifier{o.Schema, t}.Sanitize(), prodlog.ErrNoTable)
		}
	}
	err = tx.QueryRow(ctx, `SELECT name, status::text FROM `+runs+` WHERE id = $1`, o.RunID).Scan(&log.Workflow, &log.Status)
	hasRow := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return log, eventlog.Unavailable("read "+runs, err)
	}
	// A run stormctl wrote (its workflow named stormctl/<scenario>, or no
	// row to say) maps back onto what stormctl wrote, strictly.
	_, named := devkitworld.ScenarioOf(log.Workflow)
	stormctls := named || !hasRow || log.Workflow == devkitworld.WorkflowName("")
	// The package's events.list: WHERE run_id = $1 ORDER BY id.
	rows, err := tx.Query(ctx, `SELECT id, type, correlation_id, created_at, payload::text, payload_cbor FROM `+events+` WHERE run_id = $1 ORDER BY id`, o.RunID)
	if err != nil {
		return log, eventlog.Unavailable("read "+events, err)
	}
	for rows.Next() {
		var (
			id, typ     string
			corr, jsonb *string
			created     time.Time
			cbor        []byte
		)
		if err := rows.Scan(&id, &typ, &corr, &created, &jsonb, &cbor); err != nil {
			rows.Close()
			return log, fmt.Errorf("read %s: %w", events, err)
		}
		data, err := eventData(cbor, jsonb)
		if err != nil {
			rows.Close()
			return log, fmt.Errorf("run %s: event %s (%s): %w", o.RunID, id, typ, err)
		}
		e, err := devkitworld.EventOf(o.RunID, id, typ, deref(corr), data)
		if err != nil && !stormctls {
			// Another writer's event (the published runtime's, an
			// application's): as the package holds it.
			e, err = eventlog.Event{RunID: o.RunID, ID: id, Type: eventlog.Type(typ), CorrelationID: deref(corr), Payload: data}, nil
		}
		if err != nil {
			rows.Close()
			return log, fmt.Errorf("run %s: %w", o.RunID, err)
		}
		if e.Package, err = packageEvent(o.RunID, id, typ, deref(corr), created, cbor, jsonb); err != nil {
			rows.Close()
			return log, fmt.Errorf("run %s: event %s (%s): %w", o.RunID, id, typ, err)
		}
		log.Events = append(log.Events, e)
		log.CreatedAt = append(log.CreatedAt, created)
	}
	if err := rows.Err(); err != nil {
		return log, eventlog.Unavailable("read "+events, err)
	}
	if !hasRow && len(log.Events) == 0 {
		return log, fmt.Errorf("run %s: %w in %s or %s", o.RunID, prodlog.ErrNoRun, runs, events)
	}
	return log, nil
}

// eventData is a row's eventData as the package reads it
// (`eventData ||= eventDataJson`): the CBOR column, else the legacy JSON.
func eventData(cbor []byte, jsonb *string) (json.RawMessage, error) {
	if len(cbor) > 0 {
		data, err := toJSON(cbor)
		if err != nil {
			return nil, fmt.Errorf("payload_cbor: %w", err)
		}
		if string(data) != "null" {
			return data, nil
		}
	}
	if jsonb != nil {
		return json.RawMessage(*jsonb), nil
	}
	return nil, nil
}

// packageEvent is a row as the package's events.list returns it
// (eventId, runId, eventType, correlationId, eventData, createdAt), byte
// arrays as {"__type":"Uint8Array","data":base64}: what the published
// runtime is served when it replays the log.
func packageEvent(runID, id, typ, corr string, created time.Time, cbor []byte, jsonb *string) (json.RawMessage, error) {
	var data json.RawMessage
	if len(cbor) > 0 {
		d, err := toPackageJSON(cbor)
		if err != nil {
			return nil, fmt.Errorf("payload_cbor: %w", err)
		}
		if string(d) != "null" {
			data = d
		}
	}
	if data == nil && jsonb != nil {
		data = json.RawMessage(*jsonb)
	}
	pe := map[string]any{"eventId": id, "runId": runID, "eventType": typ, "createdAt": created.UTC().Format("2006-01-02T15:04:05.000Z")}
	if corr != "" {
		pe["correlationId"] = corr
	}
	if data != nil {
		pe["eventData"] = data
	}
	return json.Marshal(pe)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
