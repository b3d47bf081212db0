#!/usr/bin/env node
// An Arvo client of a Rust workflow over NATS JetStream (orchestrator-nats's layout), with the
// real arvo-core 2.2.13:
//
//   node nats-client.mjs start   <STREAM> [<prefix>] [--pairs 6x7,2x3] [--timeout-ms 30000]
//   node nats-client.mjs hostile <STREAM> [<prefix>] [--oversize <bytes>]
//
// `start`: for each pair a×b, builds the init event of the `arvo.orc.interop.product` workflow
// with createArvoOrchestratorEventFactory(contract).init(...) (its subject, `to` and `source`
// made by arvo-core), publishes it to the workflow's topic, then waits on its own topic
// (`com.interop.client`, through the topic's durable consumer) for the completion events and
// validates each with arvo-core: the event parses as an ArvoEvent, its type is the contract's
// complete type, its data passes the contract's `complete` schema, its dataschema names the
// contract, its subject is the init's and parses as an orchestration subject of the workflow
// started by this client. Prints a JSON report on stdout: {ok, workflows: [...], failures}.
//
// `hostile`: publishes to the workflow's topic the events a broken or hostile Arvo program could
// send (data against the schema, a subject that is no orchestration subject, malformed JSON,
// JSON that is no event, an event addressed to another topic, a body over the size allowed) and
// prints {published: [{name, seq, bytes}]} with each message's sequence in the event stream.
//
// NATS_URL (default nats://127.0.0.1:4222). Exit code 0 when the report is ok, 1 otherwise,
// 2 on bad usage.
import { createRequire } from 'node:module';
import { deployment, ensureConsumer, eventSubject, log, messageId, nats, publishEvent, publishRaw, quietConsole, toArvoEvent } from './nats-wire.mjs';

quietConsole();
const require = createRequire(import.meta.url);
const { createArvoOrchestratorEventFactory, ArvoOrchestrationSubject, EventDataschemaUtil } = require('arvo-core');
const { productWorkflowContract } = await import('./nats-contracts.mjs');

export const CLIENT = 'com.interop.client';

const usage = () => {
  log('client', 'usage: node nats-client.mjs start|hostile <STREAM> [<prefix>] [--pairs 6x7,2x3] [--timeout-ms N] [--oversize BYTES]');
  process.exit(2);
};

const argv = process.argv.slice(2);
const flags = {};
const positional = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--')) flags[argv[i].slice(2)] = argv[++i];
  else positional.push(argv[i]);
}
const [mode, stream, prefix] = positional;
if (!stream || !['start', 'hostile'].includes(mode)) usage();
const dep = deployment(stream, prefix);
const url = process.env.NATS_URL || 'nats://127.0.0.1:4222';

const versioned = productWorkflowContract.version('1.0.0');
const factory = createArvoOrchestratorEventFactory(versioned);
const completeType = productWorkflowContract.metadata.completeEventType;
const workflowTopic = productWorkflowContract.type;

const nc = await nats.connect({ servers: url, name: `arvo-nats-client/${dep.stream}` });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();
const out = (report) => process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);

/** The init event of a×b (arvo-core made: subject, `to` = the workflow's type, `source`). */
const init = (a, b) => factory.init({ source: CLIENT, data: { a, b, parentSubject$$: null } });

/** Checks a completion event (its JSON) against the init it answers, with arvo-core. */
const validate = (json, initEvent) => {
  const failures = [];
  const check = (cond, message) => {
    if (!cond) failures.push(message);
  };
  let event = null;
  try {
    event = toArvoEvent(json);
  } catch (e) {
    failures.push(`arvo-core's ArvoEvent refused the completion: ${e.message}`);
    return { failures, event: null };
  }
  check(event.type === completeType, `type ${event.type} is not ${completeType}`);
  const parsedData = versioned.emits[completeType].safeParse(event.data);
  check(parsedData.success, `data does not pass the contract's complete schema: ${parsedData.error}`);
  const schema = EventDataschemaUtil.parse(event);
  check(schema?.uri === productWorkflowContract.uri && schema?.version === versioned.version, `dataschema ${event.dataschema} is not ${productWorkflowContract.uri}/${versioned.version}`);
  check(event.subject === initEvent.subject, 'the subject is not the init event\'s');
  let subject = null;
  try {
    subject = ArvoOrchestrationSubject.parse(event.subject);
    check(subject.orchestrator.name === workflowTopic, `subject orchestrator ${subject.orchestrator.name} is not ${workflowTopic}`);
    check(subject.execution.initiator === CLIENT, `subject initiator ${subject.execution.initiator} is not ${CLIENT}`);
  } catch (e) {
    failures.push(`the subject does not parse: ${e.message}`);
  }
  check(event.source === workflowTopic, `source ${event.source} is not ${workflowTopic}`);
  check(event.to === CLIENT, `to ${event.to} is not ${CLIENT}`);
  return { failures, event, data: parsedData.success ? parsedData.data : null, subject };
};

const start = async () => {
  const pairs = (flags.pairs ?? '6x7').split(',').map((p) => p.split('x').map(Number));
  const timeoutMs = Number(flags['timeout-ms'] ?? 30_000);
  // The completions' topic is bound before anything is started: no completion is missed.
  const consumer = await ensureConsumer(js, jsm, dep, CLIENT);
  const started = [];
  for (const [a, b] of pairs) {
    const event = init(a, b);
    const ack = await publishEvent(js, dep, event.toJSON());
    log('client', `started ${workflowTopic} ${a}x${b}: init ${event.id} (stream seq ${ack.seq})`);
    started.push({ a, b, init: event });
  }
  const bySubject = new Map(started.map((s) => [s.init.subject, s]));
  const results = new Map();
  const failures = [];
  const deadline = Date.now() + timeoutMs;
  while (results.size < started.length && Date.now() < deadline) {
    const messages = await consumer.fetch({ max_messages: 16, expires: Math.max(100, Math.min(1000, deadline - Date.now())) });
    for await (const msg of messages) {
      let json = null;
      try {
        json = JSON.parse(msg.string());
      } catch (e) {
        failures.push(`a message on ${CLIENT} is not JSON: ${e.message}`);
      }
      const mine = json && bySubject.get(json.subject);
      if (!mine) {
        if (json) failures.push(`an event for another subject arrived on ${CLIENT}: ${json.type} ${json.id}`);
      } else if (results.has(json.subject)) {
        failures.push(`a second completion for ${mine.a}x${mine.b}: ${json.id}`);
      } else {
        const checked = validate(json, mine.init);
        failures.push(...checked.failures.map((f) => `${mine.a}x${mine.b}: ${f}`));
        results.set(json.subject, {
          a: mine.a,
          b: mine.b,
          init: mine.init.toJSON(),
          completion: json,
          data: checked.data,
          subject: checked.subject,
          valid: checked.failures.length === 0,
          natsMsgId: msg.headers?.get('Nats-Msg-Id') ?? null,
          expectedMsgId: messageId(json.source, json.id),
          contentType: msg.headers?.get('Content-Type') ?? null,
        });
      }
      await msg.ackAck();
    }
  }
  const missing = started.filter((s) => !results.has(s.init.subject)).map((s) => `${s.a}x${s.b}`);
  if (missing.length) failures.push(`no completion within ${timeoutMs} ms for ${missing.join(', ')}`);
  const report = {
    ok: failures.length === 0,
    arvoCore: require('arvo-core/package.json').version,
    workflows: started.map((s) => results.get(s.init.subject) ?? { a: s.a, b: s.b, init: s.init.toJSON(), completion: null }),
    failures,
  };
  out(report);
  return report.ok;
};

const hostile = async () => {
  const subject = eventSubject(dep.prefix, workflowTopic);
  const published = [];
  const send = async (name, body, msgId) => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
    const ack = await publishRaw(js, subject, bytes, msgId);
    log('client', `hostile ${name}: ${bytes.length} bytes, stream seq ${ack.seq}`);
    published.push({ name, seq: ack.seq, bytes: bytes.length });
  };
  const valid = () => init(2, 3).toJSON();

  // Data that the contract's init schema refuses (a string for a number, b missing).
  const wrongSchema = { ...valid(), data: { a: 'six', parentSubject$$: null } };
  await send('wrong-schema', JSON.stringify(wrongSchema), messageId(wrongSchema.source, wrongSchema.id));
  // A valid event whose subject is not an orchestration subject.
  const badSubject = { ...valid(), subject: 'not-an-orchestration-subject' };
  await send('bad-subject', JSON.stringify(badSubject), messageId(badSubject.source, badSubject.id));
  // An event addressed to another topic, on this topic's subject.
  const elsewhere = { ...valid(), to: 'com.interop.elsewhere' };
  await send('wrong-topic', JSON.stringify(elsewhere), messageId(elsewhere.source, elsewhere.id));
  // Bytes that are not JSON, and JSON that is not an event.
  await send('malformed-json', '{"id": "broken", "source": ');
  await send('not-an-event', JSON.stringify({ hello: 'world' }));
  // A valid init, padded beyond the size the deployment takes (unknown keys are stripped by the
  // schema: only the size is wrong).
  const size = Number(flags.oversize ?? 200_000);
  const big = valid();
  big.data = { ...big.data, padding: 'x'.repeat(size) };
  await send('oversize', JSON.stringify(big), messageId(big.source, big.id));
  out({ ok: true, subject, published });
  return true;
};

let ok = false;
try {
  ok = mode === 'start' ? await start() : await hostile();
} catch (e) {
  log('client', `failed: ${e?.stack ?? e}`);
  out({ ok: false, failures: [String(e?.message ?? e)] });
}
await nc.drain();
process.exit(ok ? 0 : 1);
