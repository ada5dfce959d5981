package stormdir

import "github.com/stormctl/stormctl/reports"

// This file reads the artifacts of an older schema as this build's.
//
// Schema 1 spelt the multi-word keys of storm.json, runs.jsonl and
// history.jsonl in camelCase ("runId", "timeScale", "mintedAt") while
// summary.json, the documented contract that users' jq scripts and the CI
// gate read, spelt its own in snake_case ("non_prefix_reads",
// "true_positives"). Schema 2 spells every key of every artifact in
// snake_case. The final logs under events/ are the store's events in its
// own format ("eventId", "correlationId", as the DevKit worlds write them)
// in every schema.

// camelSchema is the schema whose keys were camelCase.
const camelSchema = 1

// camelKeys maps every camelCase key schema 1 wrote to its schema 2 name.
var camelKeys = map[string]string{
	// storm.json
	"runsInFlight":     "runs_in_flight",
	"timeScale":        "time_scale",
	"pageSize":         "page_size",
	"pageSizes":        "page_sizes",
	"runsInFlightUsed": "runs_in_flight_used",
	"latencyWindows":   "latency_windows",
	"faultSchedule":    "fault_schedule",
	"faultsPerKind":    "faults_per_kind",
	// runs.jsonl (and its stats and verdicts)
	"runId":              "run_id",
	"durationMs":         "duration_ms",
	"commitSource":       "commit_source",
	"gaveUp":             "gave_up",
	"infraErrors":        "infra_errors",
	"holeRefusals":       "hole_refusals",
	"sealedWrites":       "sealed_writes",
	"unrecognisedErr":    "unrecognised_err",
	"lastStoreOK":        "last_store_ok",
	"lastUnavailable":    "last_unavailable",
	"lastUnavailableErr": "last_unavailable_err",
	"expectedSeq":        "expected_seq",
	"actualSeq":          "actual_seq",
	// history.jsonl
	"errText":     "err_text",
	"reservedAt":  "reserved_at",
	"mintedAt":    "minted_at",
	"committedAt": "committed_at",
	"setHash":     "set_hash",
}

// readable reports whether this build reads the artifacts of schema.
func readable(schema int) bool {
	return schema == reports.SchemaVersion || schema == camelSchema
}

// upgrade returns b, a JSON document or line of an artifact of schema, as
// this build's schema spells it: schema 1's keys renamed (camelKeys), the
// values of "payload" members (what a workflow wrote) left as they are.
// Everything else is kept byte for byte, white space included, so the
// line an error names is the line as stored. b of this build's schema, or
// of one it does not read, comes back as it is.
func upgrade(schema int, b []byte) []byte {
	if schema != camelSchema {
		return b
	}
	return renameKeys(b, camelKeys)
}

// renameKeys renames the object keys of the JSON text b found in keys,
// skipping the values of "payload" members. It never fails: on text that
// is not JSON it renames what looks like a key and copies the rest, and
// the decoder that reads the result reports what is wrong with it.
func renameKeys(b []byte, keys map[string]string) []byte {
	out := make([]byte, 0, len(b)+len(b)/8)
	for i := 0; i < len(b); {
		if b[i] != '"' {
			out = append(out, b[i])
			i++
			continue
		}
		end := stringEnd(b, i)
		colon := skipSpace(b, end)
		if colon >= len(b) || b[colon] != ':' {
			out = append(out, b[i:end]...) // a string value
			i = end
			continue
		}
		key := string(b[i+1 : end-1])
		if to, ok := keys[key]; ok {
			out = append(out, '"')
			out = append(out, to...)
			out = append(out, '"')
		} else {
			out = append(out, b[i:end]...)
		}
		out = append(out, b[end:colon+1]...)
		i = colon + 1
		if key == "payload" {
			v := valueEnd(b, skipSpace(b, i))
			out = append(out, b[i:v]...)
			i = v
		}
	}
	return out
}

// stringEnd is the index just past the string that starts at b[i] (a
// quote), or len(b) when it is not closed.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index just past the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); {
		switch b[j] {
		case '"':
			j = stringEnd(b, j)
			if depth == 0 {
				return j
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
		j++
	}
	return len(b)
}
