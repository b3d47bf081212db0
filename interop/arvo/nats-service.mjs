#!/usr/bin/env node
// Hosts an Arvo service handler (arvo-event-handler 2.2.13's createArvoEventHandler, for the
// `com.interop.multiply` contract built with arvo-core's createArvoContract) on a NATS JetStream
// deployment of orchestrator-nats:
//
//   node nats-service.mjs <STREAM> [<subject prefix>]     (NATS_URL, default nats://127.0.0.1:4222)
//
// It binds the topic's durable pull consumer (creating the streams and the consumer with the
// settings orchestrator-nats uses when they do not exist), pulls the events, runs the handler,
// publishes its output events to their `to` topics (CloudEvents structured mode, Nats-Msg-Id)
// and acknowledges each event once its outputs are stored.
//
// What is not an event of the contract never reaches the handler, and nothing stops the service:
//   * a body over ARVO_MAX_EVENT_BYTES (default 1 MiB), malformed JSON, JSON that arvo-core's
//     ArvoEvent refuses, an event whose `to` is not the topic it came on: a dead letter;
//   * a violation thrown by the handler (arvo-event-handler throws ContractViolation for data
//     that fails the contract's schema and ConfigViolation for another type or version: Arvo
//     leaves violations to the caller): a dead letter with the violation as its reason;
//   * any other error of the handler function: the handler itself turns it into a
//     `sys.com.interop.multiply.error` event to the event's source (Arvo's system error), which
//     is published like any output.
// Dead letters use orchestrator-nats's layout (NatsTransport::dead_letters reads them).
//
// stdout: one JSON line per message handled ({"ready":…} first); stderr: logs. SIGTERM/SIGINT
// finish the message in hand, drain the connection and exit 0.
import { createRequire } from 'node:module';
import {
  consumerName,
  deadLetter,
  deployment,
  ensureConsumer,
  ensureStreams,
  eventSubject,
  log,
  messageId,
  nats,
  publishEvent,
  quietConsole,
  toArvoEvent,
} from './nats-wire.mjs';

quietConsole();
const require = createRequire(import.meta.url);
const { createArvoEventHandler } = require('arvo-event-handler');
const { multiplyContract } = await import('./nats-contracts.mjs');

const [stream, prefixArg] = process.argv.slice(2);
if (!stream) {
  log('service', 'usage: node nats-service.mjs <STREAM> [<subject prefix>]');
  process.exit(2);
}
const dep = deployment(stream, prefixArg);
const url = process.env.NATS_URL || 'nats://127.0.0.1:4222';
const maxEventBytes = Number(process.env.ARVO_MAX_EVENT_BYTES || 1024 * 1024);
const maxDeliver = Number(process.env.ARVO_MAX_DELIVER || 20);
const report = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

export const multiplyHandler = createArvoEventHandler({
  contract: multiplyContract,
  executionunits: 1,
  handler: {
    '1.0.0': async ({ event }) => {
      const { a, b } = event.data;
      const product = a * b;
      // A runtime error, not a violation: Arvo answers it with a system error event.
      if (!Number.isFinite(product)) throw new Error(`the product of ${a} and ${b} is not a finite number`);
      return { type: 'evt.interop.multiply.success', data: { product } };
    },
  },
});

const topic = multiplyHandler.source;
const subject = eventSubject(dep.prefix, topic);

let stopping = false;
let wake = () => {};
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    log('service', `${signal}: stopping`);
    stopping = true;
    wake();
  });
}

const nc = await nats.connect({ servers: url, name: `arvo-nats-service/${dep.stream}` });
const js = nc.jetstream();
const jsm = await nc.jetstreamManager();
/** The streams and the topic's durable consumer, created when missing. */
const bind = async () => {
  await ensureStreams(jsm, dep);
  return ensureConsumer(js, jsm, dep, topic);
};
log('service', `deployment ${dep.stream} (prefix ${dep.prefix}): handling ${topic} on ${subject}`);

/** What is wrong with a message before it reaches the handler, or its event. */
const admit = (msg, attempt) => {
  if (attempt > maxDeliver) return { reason: `delivered ${attempt} times, more than max_deliver (${maxDeliver})` };
  if (msg.subject !== subject) return { reason: `subject \`${msg.subject}\` is not the subject of topic \`${topic}\`` };
  if (msg.data.length > maxEventBytes) {
    return { reason: `the message is not a valid event: event is ${msg.data.length} bytes, larger than the maximum of ${maxEventBytes} bytes` };
  }
  let json;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(msg.data));
  } catch (e) {
    return { reason: `the message is not a valid event: malformed JSON (${e.message})` };
  }
  let event;
  try {
    event = toArvoEvent(json);
  } catch (e) {
    return { reason: `the message is not a valid event: arvo-core refused it (${e.message})` };
  }
  if (event.to !== topic) return { reason: `event \`${event.id}\` is addressed to ${JSON.stringify(event.to)}, but came on topic \`${topic}\`` };
  return { event };
};

/** One line, for logs and headers. */
const oneLine = (text) => String(text).replace(/\s+/g, ' ');

const handle = async (msg) => {
  const attempt = msg.info.redeliveryCount;
  const seq = msg.info.streamSequence;
  const { event, reason } = admit(msg, attempt);
  if (!event) {
    await deadLetter(nc, js, dep, msg, attempt, reason);
    log('service', `dead letter (stream seq ${seq}): ${reason}`);
    report({ seq, outcome: 'dead-letter', reason });
    return;
  }
  let outputs;
  try {
    outputs = await multiplyHandler.execute(event, { inheritFrom: 'EVENT' });
  } catch (e) {
    const name = String(e?.name ?? 'Error');
    if (name.includes('ViolationError')) {
      const why = oneLine(`the handler returned a violation: ${e.message}`);
      await deadLetter(nc, js, dep, msg, attempt, why);
      log('service', `dead letter ${event.id}: ${why}`);
      report({ seq, id: event.id, outcome: 'dead-letter', violation: name, reason: why });
    } else {
      // Not Arvo's: try again later.
      log('service', `handling ${event.id} failed (${e?.stack ?? e}); delivered again later`);
      msg.nak(1000);
      report({ seq, id: event.id, outcome: 'retry', reason: String(e?.message ?? e) });
    }
    return;
  }
  const emitted = [];
  for (const out of outputs) {
    const json = out.toJSON();
    await publishEvent(js, dep, json);
    emitted.push({ id: json.id, source: json.source, type: json.type, to: json.to, data: json.data, msgId: messageId(json.source, json.id) });
  }
  await msg.ackAck();
  log('service', `${event.id} (${event.type}) → ${emitted.map((e) => `${e.type} to ${e.to}`).join(', ') || 'nothing'}`);
  report({ seq, id: event.id, outcome: 'handled', emitted });
};

let consumer = await bind();
report({ ready: true, topic, subject, consumer: consumerName(topic), stream: dep.stream });

while (!stopping) {
  try {
    const messages = await consumer.fetch({ max_messages: 16, expires: 1000 });
    wake = () => messages.stop();
    for await (const msg of messages) {
      try {
        await handle(msg);
      } catch (e) {
        // Publishing or settling failed: the message is delivered again after a nak (or the ack wait).
        log('service', `settling stream seq ${msg.info.streamSequence} failed: ${e?.stack ?? e}`);
        try {
          msg.nak(1000);
        } catch {
          // the connection is gone; the ack wait brings the message back
        }
      }
    }
  } catch (e) {
    // A pull that failed (the server restarting, the consumer deleted): bind again (the streams
    // are created only at start, like orchestrator-nats does).
    if (stopping) break;
    log('service', `pulling failed (${e?.message ?? e}); binding again`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    try {
      consumer = await ensureConsumer(js, jsm, dep, topic);
    } catch (e2) {
      log('service', `binding failed (${e2?.message ?? e2})`);
    }
  }
}
await nc.drain();
log('service', 'stopped');
process.exit(0);
