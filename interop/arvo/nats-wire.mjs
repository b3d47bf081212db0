// The layout orchestrator-nats uses on a NATS JetStream server, written again for Node.js so
// that Arvo programs (arvo-core / arvo-event-handler 2.2.13) can take part in a deployment:
//
// * one stream per deployment (`<STREAM>`, work-queue retention, file storage) on
//   `<prefix>.t.>`, and a dead-letter stream (`<STREAM>_DEAD`, limits retention) on
//   `<prefix>.dead.>`;
// * the events of topic `t` (an event's `to`) on `<prefix>.t.<encodeTopic(t)>`;
// * one durable pull consumer per topic, named `consumerName(t)`, shared by every process that
//   handles the topic (explicit acks, deliver all, no server-side delivery limit);
// * CloudEvents NATS binding, structured mode: the body is the event's JSON, with
//   `Content-Type: application/cloudevents+json` and `Nats-Msg-Id: messageId(source, id)`;
// * a dead letter is the message's body published to `<prefix>.dead.<tokens>` with the headers
//   Orchestrator-Reason / -Attempt / -Subject / -Sequence and `Nats-Msg-Id: dead-<STREAM>-<seq>`,
//   then the message is terminated (`+TERM`).
//
// Every function here mirrors orchestrator-nats/src/subject.rs and src/shared.rs; the Rust test
// `orchestrator-nats/tests/arvo_interop.rs` checks that both sides meet on the same server.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const nats = require('nats');
const { ArvoEvent } = require('arvo-core');

export const { AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, headers, nanos } = nats;

export const CLOUDEVENTS_JSON = 'application/cloudevents+json';
export const REASON = 'Orchestrator-Reason';
export const ATTEMPT = 'Orchestrator-Attempt';
export const ORIGINAL_SUBJECT = 'Orchestrator-Subject';
export const ORIGINAL_SEQUENCE = 'Orchestrator-Sequence';
export const TRUNCATED = 'Orchestrator-Truncated';
const MAX_REASON = 4096;

const isPlain = (byte) =>
  (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x2d || byte === 0x5f;

/** `topic` as subject tokens: dots kept, other bytes outside [A-Za-z0-9_-] as `~XX`, empty parts as `~`. */
export const encodeTopic = (topic) =>
  topic
    .split('.')
    .map((part) => {
      if (part === '') return '~';
      let out = '';
      for (const byte of Buffer.from(part, 'utf8')) {
        out += isPlain(byte) ? String.fromCharCode(byte) : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
      }
      return out;
    })
    .join('.');

export const eventSubject = (prefix, topic) => `${prefix}.t.${encodeTopic(topic)}`;
export const deadSubject = (prefix, topic) => `${prefix}.dead.${encodeTopic(topic)}`;

const hex = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** The durable consumer of `topic`: `t_<first 32 bytes, others as _>_<16 hex digits of sha256(topic)>`. */
export const consumerName = (topic) => {
  const bytes = Buffer.from(topic, 'utf8');
  let readable = '';
  for (const byte of bytes.subarray(0, 32)) readable += isPlain(byte) ? String.fromCharCode(byte) : '_';
  return `t_${readable}_${hex(bytes).slice(0, 16)}`;
};

/** `Nats-Msg-Id` of an event: 32 hex digits of sha256(source, U+001F, id). */
export const messageId = (source, id) => hex(Buffer.concat([Buffer.from(source, 'utf8'), Buffer.from([0x1f]), Buffer.from(id, 'utf8')])).slice(0, 32);

/** A deployment's names, as `NatsConfig::deployment(stream)` makes them. */
export const deployment = (stream, prefix = stream.toLowerCase()) => ({
  stream,
  deadStream: `${stream}_DEAD`,
  prefix,
});

const isNotFound = (e) => e?.api_error?.code === 404 || /not found/i.test(String(e?.message));

/**
 * Creates the event and dead-letter streams if they do not exist, with the settings
 * orchestrator-nats gives them (an existing stream is used as it is).
 */
export const ensureStreams = async (jsm, dep) => {
  const wanted = [
    {
      name: dep.stream,
      subjects: [`${dep.prefix}.t.>`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: 1,
      duplicate_window: nanos(120_000),
      description: 'orchestrator events, by topic (orchestrator-nats)',
    },
    {
      name: dep.deadStream,
      subjects: [`${dep.prefix}.dead.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: 1,
      max_msgs: 100_000,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(120_000),
      description: 'orchestrator dead letters (orchestrator-nats)',
    },
  ];
  for (const config of wanted) {
    try {
      await jsm.streams.info(config.name);
    } catch (e) {
      if (!isNotFound(e)) throw e;
      try {
        await jsm.streams.add(config);
      } catch (e2) {
        // Another process created it meanwhile.
        if (!/already in use/i.test(String(e2?.message))) throw e2;
      }
    }
  }
};

/**
 * The durable pull consumer of `topic`, created with the configuration orchestrator-nats uses
 * when it does not exist yet (creating it again with the same configuration is a no-op for the
 * server, so a Rust process and this one may race). `ackWaitMs` must match the Rust side's
 * `NatsConfig::ack_wait` (30 s by default).
 */
export const ensureConsumer = async (js, jsm, dep, topic, ackWaitMs = 30_000) => {
  const name = consumerName(topic);
  try {
    await jsm.consumers.info(dep.stream, name);
  } catch (e) {
    if (!isNotFound(e)) throw e;
    await jsm.consumers.add(dep.stream, {
      durable_name: name,
      description: `orchestrator topic ${topic}`,
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(ackWaitMs),
      max_deliver: -1,
      filter_subject: eventSubject(dep.prefix, topic),
      num_replicas: 1,
    });
  }
  return js.consumers.get(dep.stream, name);
};

/** Publishes an event (its `toJSON()` shape) to its `to` topic, CloudEvents structured mode. */
export const publishEvent = async (js, dep, json) => {
  if (typeof json.to !== 'string') throw new Error(`event ${json.id} has no 'to'`);
  return publishRaw(js, eventSubject(dep.prefix, json.to), Buffer.from(JSON.stringify(json), 'utf8'), messageId(json.source, json.id));
};

/** Publishes `body` to `subject` with the structured-mode content type (and `msgId`, if any). */
export const publishRaw = async (js, subject, body, msgId) => {
  const h = headers();
  h.set('Content-Type', CLOUDEVENTS_JSON);
  const options = { headers: h };
  if (msgId) options.msgID = msgId;
  return js.publish(subject, body, options);
};

const headerText = (text) => {
  // eslint-disable-next-line no-control-regex
  let out = String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  while (Buffer.byteLength(out, 'utf8') > MAX_REASON) out = out.slice(0, -1);
  return out;
};

/**
 * Moves a delivered JetStream message to the dead letters with `reason`, the way
 * orchestrator-nats does: published (and stored) to the dead-letter stream, then terminated.
 */
export const deadLetter = async (nc, js, dep, msg, attempt, reason) => {
  const maxPayload = nc.info?.max_payload ?? 0;
  const tokens = msg.subject.startsWith(`${dep.prefix}.t.`) ? msg.subject.slice(dep.prefix.length + 3) : '~';
  const sequence = msg.info?.streamSequence ?? 0;
  const h = headers();
  const contentType = msg.headers?.get('Content-Type');
  if (contentType) h.set('Content-Type', contentType);
  h.set(REASON, headerText(reason));
  h.set(ATTEMPT, String(attempt));
  h.set(ORIGINAL_SUBJECT, headerText(msg.subject));
  h.set(ORIGINAL_SEQUENCE, String(sequence));
  let body = msg.data;
  if (maxPayload > 0 && body.length + 2 * MAX_REASON + 1024 > maxPayload) {
    h.set(TRUNCATED, String(body.length));
    body = body.subarray(0, Math.max(0, maxPayload - 2 * MAX_REASON - 1024));
  }
  await js.publish(`${dep.prefix}.dead.${tokens}`, body, { headers: h, msgID: `dead-${dep.stream}-${sequence}` });
  await terminate(nc, msg);
};

/** `+TERM`, confirmed by the server (like async-nats's `double_ack_with(AckKind::Term)`). */
export const terminate = async (nc, msg) => {
  if (!msg.reply) return;
  await nc.request(msg.reply, new TextEncoder().encode('+TERM'), { timeout: 5000 });
};

// The keys 2.2.13's `new ArvoEvent(context, data, extensions)` takes as context; every other
// key but `data` (parentid, domain and custom extensions) is an extension.
const CONTEXT_KEYS = new Set([
  'id', 'time', 'source', 'specversion', 'type', 'subject', 'datacontenttype', 'dataschema',
  'to', 'accesscontrol', 'redirectto', 'executionunits', 'traceparent', 'tracestate',
]);

/** An arvo-core 2.2.13 `ArvoEvent` from its flat JSON (throws when arvo-core refuses it). */
export const toArvoEvent = (json) => {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error('an event must be a JSON object');
  const context = {};
  const extensions = {};
  for (const [k, v] of Object.entries(json)) {
    if (k === 'data') continue;
    if (CONTEXT_KEYS.has(k)) context[k] = v;
    else extensions[k] = v;
  }
  // 2.2.13 requires the nullable context keys to be present.
  for (const k of ['dataschema', 'to', 'accesscontrol', 'redirectto', 'executionunits', 'traceparent', 'tracestate']) {
    if (!(k in context)) context[k] = null;
  }
  return new ArvoEvent(context, json.data, Object.keys(extensions).length ? extensions : undefined);
};

/** Logs to stderr (stdout is kept for JSON reports). */
export const log = (who, ...parts) => process.stderr.write(`[${who}] ${parts.join(' ')}\n`);

/** arvo-core and arvo-event-handler log to the console when no OpenTelemetry span is active: to stderr, or silenced. */
export const quietConsole = () => {
  const verbose = !!process.env.ARVO_NATS_VERBOSE;
  console.log = verbose ? (...a) => process.stderr.write(`${a.join(' ')}\n`) : () => {};
  console.info = console.log;
  console.warn = console.log;
  console.debug = console.log;
  console.error = verbose ? (...a) => process.stderr.write(`${a.join(' ')}\n`) : () => {};
};

export { nats };
