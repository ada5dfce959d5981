// @ts-check
// lib/pgevents.mjs: world-postgres's INSERTs into workflow_events read back
// as events (the statements as drizzle writes them; a stand-in CBOR codec).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseInsert } from '../lib/pgevents.mjs';

// cbor stands in for cbor-x: its bytes are JSON text here.
const cbor = {
  decode: (/** @type {any} */ b) => JSON.parse(Buffer.from(b).toString('utf8')),
};
const bytes = (/** @type {any} */ v) => Buffer.from(JSON.stringify(v));

const insert = 'insert into "workflow"."workflow_events" ("id", "type", "correlation_id", "created_at", "run_id", "payload", "payload_cbor", "spec_version")';

describe('parseInsert', () => {
  it('reads one row, eventData from payload_cbor', () => {
    const params = ['wevt_1', 'step_created', 'step_1', 'wrun_1', null, bytes({ stepName: 's' }), 3];
    const rows = parseInsert(`${insert} values ($1, $2, $3, default, $4, $5, $6, $7) returning "created_at"`, params, cbor);
    assert.deepEqual(rows, [{ eventId: 'wevt_1', eventType: 'step_created', correlationId: 'step_1', runId: 'wrun_1', eventData: { stepName: 's' }, specVersion: 3 }]);
  });

  it('reads several rows, and the legacy payload where no payload_cbor is given', () => {
    const text = `${insert.replace(', "payload_cbor"', '')} values ($1, $2, $3, $4, $5, $6, $7), ($8, $9, $10, $11, $12, $13, $14) on conflict do nothing`;
    const at = new Date(0);
    const params = ['wevt_1', 'run_created', null, at, 'wrun_1', { input: [] }, 2, 'wevt_2', 'run_started', null, at, 'wrun_1', null, 2];
    const rows = parseInsert(text, params, cbor);
    assert.equal(rows?.length, 2);
    assert.deepEqual(rows?.[0], { eventId: 'wevt_1', eventType: 'run_created', correlationId: null, createdAt: at, runId: 'wrun_1', eventData: { input: [] }, specVersion: 2 });
    assert.equal(rows?.[1].eventType, 'run_started');
  });

  it('keeps payload_cbor bytes it cannot decode as they are', () => {
    const raw = Buffer.from([0xff]);
    const rows = parseInsert('INSERT INTO "workflow"."workflow_events" ("id", "payload_cbor") VALUES ($1, $2)', ['wevt_1', raw], cbor);
    assert.deepEqual(rows, [{ eventId: 'wevt_1', eventData: raw }]);
  });

  it('answers null for another statement, or a row of another width', () => {
    assert.equal(parseInsert('select 1', [], cbor), null);
    assert.equal(parseInsert('insert into "workflow"."workflow_runs" ("id") values ($1)', ['wrun_1'], cbor), null);
    assert.equal(parseInsert('insert into "workflow"."workflow_events" ("id", "type") values ($1)', ['wevt_1'], cbor), null);
  });
});
