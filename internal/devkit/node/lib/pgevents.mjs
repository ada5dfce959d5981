// @ts-check
// What the host reads of world-postgres's writes: the rows of a drizzle
// INSERT into "workflow"."workflow_events", as events (host.mjs
// watchPostgresInserts sees the statements; docs/host-protocol.md, the
// "implicit" field of an op notice).

/** @type {Record<string, string>} */
const COLUMN_FIELDS = {
  id: 'eventId',
  type: 'eventType',
  correlation_id: 'correlationId',
  created_at: 'createdAt',
  run_id: 'runId',
  spec_version: 'specVersion',
};

/**
 * parseInsert reads the rows of a drizzle INSERT into workflow_events as
 * events, or null when the statement has another shape: drizzle writes
 *   insert into "workflow"."workflow_events" ("id", "type", ...) values ($1, $2, ...), (...)
 *     [on conflict do nothing] [returning "created_at"]
 * with each value a parameter ($N, taken from params) or default (left
 * out). A column becomes the event's field (id: eventId, run_id: runId,
 * ...; others keep their name); payload_cbor, decoded with cbor (the
 * package's own cbor-x), is eventData, and the legacy jsonb payload is
 * eventData only where there is no payload_cbor.
 * @param {string} text
 * @param {any[]} params
 * @param {{decode: (bytes: any) => any}} cbor
 * @returns {Record<string, any>[] | null}
 */
export function parseInsert(text, params, cbor) {
  const m = /^\s*insert into "workflow"\."workflow_events"\s*\(([^)]*)\)\s*values\s*(.*?)(\s+on conflict|\s+returning|$)/is.exec(text);
  if (!m) return null;
  const cols = m[1].split(',').map((c) => c.trim().replace(/^"|"$/g, ''));
  const groups = [...m[2].matchAll(/\(([^()]*)\)/g)].map((g) => g[1].split(',').map((t) => t.trim()));
  const out = [];
  for (const g of groups) {
    if (g.length !== cols.length) return null;
    /** @type {Record<string, any>} */
    const ev = {};
    cols.forEach((col, i) => {
      const tok = g[i];
      const pm = /^\$(\d+)$/.exec(tok);
      if (!pm) return; // default
      const v = params[Number(pm[1]) - 1];
      if (col === 'payload_cbor') {
        try {
          ev.eventData = v == null ? v : cbor.decode(v);
        } catch {
          ev.eventData = v;
        }
      } else if (col === 'payload') {
        if (ev.eventData === undefined) ev.eventData = v;
      } else {
        ev[COLUMN_FIELDS[col] ?? col] = v;
      }
    });
    out.push(ev);
  }
  return out;
}
