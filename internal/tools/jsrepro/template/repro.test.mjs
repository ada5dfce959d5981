// A reproduction written by `stormctl shrink` (see README.md): one
// delivery of a workflow run to @workflow/core's own flow handler, against
// a small in-memory World that holds the log that delivery read when the
// run failed. It asserts what a correct runtime does with that log: replay
// it without failing the run (CORRUPTED_EVENT_LOG or any other code) and
// without asking the World for anything the schedule does not say. On the
// runtime the run came from it fails with that runtime's own
// CORRUPTED_EVENT_LOG text.
//
// Depends on @workflow/core only (and the test runner). Data: schedule.json
// (the log, the run, the answer run_started gets, the clock); workflow.js
// (the workflow code core runs: the scenario compiled for core's VM by
// @workflow/builders, as the workflows bundle hands it to
// workflowEntrypoint).
/*@@IMPORT_TEST@@*/
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';

const schedule = JSON.parse(readFileSync(new URL('./schedule.json', import.meta.url), 'utf8'));
const workflowCode = readFileSync(new URL('./workflow.js', import.meta.url), 'utf8');

// Where core looks for its World (core's runtime/world.js).
const WORLD_CACHE = Symbol.for('@workflow/world//cache');
const STUBBED_WORLD_CACHE = Symbol.for('@workflow/world//stubbedCache');
// The queue topic of workflow deliveries.
const FLOW_PREFIX = '__wkf_workflow_';

// reviveBytes turns a stored byte array ({__type: 'Uint8Array', data:
// base64}, world-local's file encoding) back into one.
function reviveBytes(_key, value) {
  if (value !== null && typeof value === 'object' && value.__type === 'Uint8Array' && typeof value.data === 'string') {
    return new Uint8Array(Buffer.from(value.data, 'base64'));
  }
  return value;
}

// slotOf is the position a slot id names (evnt_ + 26 digits, 10 leading
// zeros), null for any other id (a ULID).
function slotOf(eventId) {
  const m = /^(?:evnt_|wevt_)?(0{10}\d{16})$/.exec(eventId ?? '');
  return m ? Number(m[1]) : null;
}

// STEP_STATUS is a step's status after each step event.
const STEP_STATUS = {
  step_created: 'pending',
  step_started: 'running',
  step_retrying: 'pending',
  step_completed: 'completed',
  step_failed: 'failed',
};

// ScheduleWorld is a World holding one run's log: events.list pages it as
// the runtime asks (cursor, limit), events.create answers run_started with
// the run (started when the schedule says) and accepts every other write
// at the log's end with an id of its own, queue messages are kept and go
// nowhere. Date.now inside the delivery is the schedule's clock, so the
// runtime finds due the waits it found due. Any other storage call is
// refused by name: the schedule does not say what it would answer.
class ScheduleWorld {
  constructor(c, schemas, specVersion) {
    this.c = c;
    this.schemas = schemas;
    this.specVersion = specVersion;
    this.clock = c.clock;
    this.log = c.log.map((raw) => this.parseEvent(raw));
    // A World of slot ids (spec 6 and later) stores each event at its
    // dense position in the run's log: a log written under the legacy
    // contract (ids minted before commit) is held at positions 1..n in
    // its list order, every event otherwise as stored.
    this.renumbered = false;
    if (specVersion >= 6 && !this.log.every((e) => slotOf(e.eventId) !== null)) {
      this.log.forEach((e, i) => {
        e.eventId = 'evnt_' + String(i + 1).padStart(26, '0');
      });
      this.renumbered = true;
    }
    this.written = [];
    this.queued = [];
    this.refused = [];
    this.minted = 0;
    // readTo is how far into the schedule's log the runtime's lists read.
    this.readTo = 0;
    this.logLength = this.log.length;
    const refuse = (name) => async () => {
      this.refused.push(name);
      throw new Error(`the reproduction's World does not serve ${name}`);
    };
    const storage = (name, methods) => Object.fromEntries(methods.map((m) => [m, refuse(`${name}.${m}`)]));
    this.events = {
      create: (...a) => this.create(...a),
      list: (...a) => this.list(...a),
      ...storage('events', ['get', 'listByCorrelationId', 'createBatch']),
    };
    this.runs = storage('runs', ['get', 'list', 'create', 'update', 'cancel', 'pause', 'resume']);
    this.steps = storage('steps', ['get', 'list', 'create', 'update']);
    this.hooks = storage('hooks', ['get', 'getByToken', 'list', 'create', 'dispose']);
    this.writeToStream = refuse('writeToStream');
    this.closeStream = refuse('closeStream');
    this.readFromStream = refuse('readFromStream');
    this.listStreamsByRunId = refuse('listStreamsByRunId');
  }

  parseEvent(raw) {
    return this.schemas.event.parse(JSON.parse(JSON.stringify(raw), reviveBytes));
  }

  async list(params) {
    const cursor = params?.pagination?.cursor ?? null;
    const limit = params?.pagination?.limit ?? 100;
    let from = 0;
    if (cursor) {
      const at = this.log.findIndex((e) => e.eventId === cursor);
      if (at < 0) throw new Error(`the reproduction's World holds no event ${cursor} to list after`);
      from = at + 1;
    }
    const data = this.log.slice(from, from + limit);
    this.readTo = Math.max(this.readTo, Math.min(from + data.length, this.logLength));
    const last = data[data.length - 1];
    return { data, cursor: last ? last.eventId : cursor, hasMore: from + limit < this.log.length };
  }

  // mintId is the id of a write accepted at the log's end: the next slot
  // of a log of slot ids, else one that lists last.
  mintId() {
    this.minted++;
    if (this.slotted()) {
      const last = Math.max(...this.log.map((e) => slotOf(e.eventId)));
      return 'evnt_' + String(last + 1).padStart(26, '0');
    }
    return 'evnt_zzzz' + String(this.minted).padStart(8, '0');
  }

  // slotted says the World holds its log at slot positions (its own ids,
  // or a legacy log it renumbered): a write then takes the next slot and
  // later lists return it, as a store's would. A legacy log's writes are
  // kept aside and answered with no event, as stormctl's replay world
  // (which checked this case while shrinking it) answers them.
  slotted() {
    return this.log.length > 0 && this.log.every((e) => slotOf(e.eventId) !== null);
  }

  async create(runId, data) {
    const type = data?.eventType;
    if (type === 'run_started') return { run: this.runEntity() };
    const event = {
      runId,
      eventId: this.mintId(),
      eventType: type,
      correlationId: data?.correlationId,
      eventData: data?.eventData,
      specVersion: data?.specVersion ?? this.c.created.specVersion,
      createdAt: new Date(this.clock),
    };
    const parsed = this.schemas.event.safeParse(event);
    const stored = parsed.success ? parsed.data : event;
    this.written.push(stored);
    if (!this.slotted()) return {};
    this.log.push(stored);
    const out = { event: stored };
    if (STEP_STATUS[type]) out.step = this.stepEntity(type, data?.correlationId, data?.eventData);
    return out;
  }

  // stepEntity is the step as a store answers a step event's create (core
  // 5.0 runs a step inline from a step_started's answer).
  stepEntity(type, corr, eventData) {
    const created = this.log.find((e) => e.correlationId === corr && e.eventType === 'step_created')?.eventData ?? eventData ?? {};
    const attempt = this.log.filter((e) => e.correlationId === corr && e.eventType === 'step_started').length;
    const now = new Date(this.clock);
    const step = {
      runId: this.c.runId,
      stepId: corr,
      stepName: eventData?.stepName ?? created.stepName ?? '',
      status: STEP_STATUS[type],
      input: created.input ?? eventData?.input,
      attempt: Math.max(attempt, type === 'step_created' ? 0 : 1),
      startedAt: attempt > 0 ? now : undefined,
      createdAt: now,
      updatedAt: now,
      specVersion: this.c.created.specVersion,
    };
    const parsed = this.schemas.step?.safeParse?.(step);
    return parsed?.success ? parsed.data : step;
  }

  // runEntity is the run as run_started answers it: run_created's
  // fields, running since the schedule's startedAt.
  runEntity() {
    const c = this.c.created;
    const d = JSON.parse(JSON.stringify(c.eventData ?? {}), reviveBytes);
    return this.schemas.run.parse({
      runId: this.c.runId,
      deploymentId: d.deploymentId,
      workflowName: d.workflowName,
      specVersion: c.specVersion,
      executionContext: d.executionContext,
      input: d.input,
      status: 'running',
      startedAt: new Date(this.c.startedAt),
      createdAt: new Date(c.createdAt),
      updatedAt: new Date(this.c.startedAt),
    });
  }

  async queue(queueName, message) {
    this.queued.push({ queueName, message });
    return { messageId: `msg_repro_${this.queued.length}` };
  }

  // createQueueHandler parses a delivery as a queue would and hands it to
  // the runtime's handler.
  createQueueHandler(prefix, handler) {
    return async (req) => {
      const queueName = req.headers.get('x-vqs-queue-name') ?? '';
      if (!queueName.startsWith(prefix)) return Response.json({ error: 'Unhandled queue' }, { status: 400 });
      const body = JSON.parse(await req.text(), reviveBytes);
      try {
        const result = await handler(body, {
          attempt: Number(req.headers.get('x-vqs-message-attempt') ?? 1),
          queueName,
          messageId: req.headers.get('x-vqs-message-id'),
        });
        return Response.json(typeof result?.timeoutSeconds === 'number' ? { timeoutSeconds: result.timeoutSeconds } : { ok: true });
      } catch (error) {
        return Response.json(String(error?.stack ?? error), { status: 500 });
      }
    };
  }

  async getDeploymentId() {
    return 'dpl_stormctl_repro';
  }
}

// errorText is a run_failed's error as text: a plain {message} or string
// (4.x), or the serialized bytes 5.0 stores (a 4-byte tag: "devl" +
// devalue text, "gzip" + a gzipped tagged value).
function errorText(error) {
  if (error == null) return '(no error recorded)';
  if (typeof error === 'string') return error;
  if (typeof error.message === 'string') return error.message;
  const bytes = error instanceof Uint8Array ? error : Uint8Array.from(Object.values(error));
  try {
    return decodeSerialized(Buffer.from(bytes));
  } catch {
    return JSON.stringify(error);
  }
}

function decodeSerialized(buf) {
  const tag = buf.subarray(0, 4).toString('latin1');
  if (tag === 'gzip') return decodeSerialized(gunzipSync(buf.subarray(4)));
  if (tag !== 'devl') throw new Error(`a serialized value tagged ${JSON.stringify(tag)}`);
  const text = buf.subarray(4).toString('utf8');
  // devalue: a flat array whose objects name their fields by index.
  const flat = JSON.parse(text);
  const at = (i) => (typeof i === 'number' ? flat[i] : undefined);
  for (const v of flat) {
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof at(v.message) === 'string') return at(v.message);
  }
  return text;
}

test(schedule.title, async () => {
  const coreRequire = createRequire(createRequire(import.meta.url).resolve('@workflow/core'));
  const worldPkg = await import(pathToFileURL(coreRequire.resolve('@workflow/world')).href);
  const schemas = { event: worldPkg.EventSchema, run: worldPkg.WorkflowRunSchema, step: worldPkg.StepSchema };
  // The World speaks the contract the installed runtime asks for; the log
  // it holds is the run's, stamped with the spec it was written under.
  const world = new ScheduleWorld(schedule.case, schemas, worldPkg.SPEC_VERSION_CURRENT);
  globalThis[WORLD_CACHE] = world;
  globalThis[STUBBED_WORLD_CACHE] = world;
  const { workflowEntrypoint } = await import('@workflow/core/runtime');
  const flow = workflowEntrypoint(workflowCode);

  const message = { runId: schedule.case.runId, requestedAt: new Date(schedule.case.clock).toISOString() };
  if (schedule.case.recovery > 0) message.replayDivergence = { eventId: '', count: schedule.case.recovery };
  const realNow = Date.now;
  Date.now = () => world.clock;
  let res;
  try {
    res = await flow(new Request('http://127.0.0.1/.well-known/workflow/v1/flow', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-vqs-queue-name': FLOW_PREFIX + schedule.workflowName,
        'x-vqs-message-id': 'msg_repro_delivery',
        'x-vqs-message-attempt': '1',
      },
      body: JSON.stringify(message),
    }));
  } finally {
    Date.now = realNow;
  }

  const held = world.renumbered ? ' (held at slot positions 1..n, as the installed runtime\'s contract stores events)' : '';
  const failed = world.written.find((e) => e.eventType === 'run_failed');
  assert.equal(failed, undefined,
    `the runtime failed the run on the log of ${schedule.case.log.length} events${held}: ${failed?.eventData?.errorCode ?? '(no code)'}: ${failed ? errorText(failed.eventData?.error) : ''}`);
  const recovery = world.queued.find((q) => q.message?.replayDivergence);
  assert.equal(recovery, undefined, 'the runtime found the replay diverged and queued a recovery replay');
  // A runtime that did not read the whole log replayed nothing it could
  // be judged on: undecided, not a pass.
  assert.equal(world.readTo, world.logLength, `inconclusive: the runtime read ${world.readTo} of the log's ${world.logLength} events`);
  // A call the schedule does not answer makes the outcome undecided, not a pass.
  assert.deepEqual(world.refused, [], `inconclusive: the runtime asked the World for what the schedule does not say (${world.refused.join(', ')})`);
  assert.ok(res.ok, `the flow handler answered ${res.status}: ${await res.text()}`);
  // Steps a runtime runs inline (5.0) fail here: their bodies are not
  // loaded. Said, not judged: the test is about the log's replay.
  const stepFailures = world.written.filter((e) => e.eventType === 'step_failed' || e.eventType === 'step_retrying');
  if (stepFailures.length > 0) {
    console.log(`note: ${stepFailures.length} step event(s) failed or retried inline (the reproduction loads no step bodies): not judged`);
  }
});
