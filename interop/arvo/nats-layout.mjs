#!/usr/bin/env node
// Prints the NATS layout nats-wire.mjs computes, for the Rust test to compare with
// orchestrator-nats's own (subject.rs):
//
//   node nats-layout.mjs <prefix> '[["topic", "source", "id"], ...]'
//
// stdout: [{topic, subject, dead, consumer, msgId}, ...]
import { consumerName, deadSubject, eventSubject, messageId } from './nats-wire.mjs';

const [prefix, cases] = process.argv.slice(2);
if (!prefix || !cases) {
  process.stderr.write("usage: node nats-layout.mjs <prefix> '[[topic, source, id], ...]'\n");
  process.exit(2);
}
const out = JSON.parse(cases).map(([topic, source, id]) => ({
  topic,
  subject: eventSubject(prefix, topic),
  dead: deadSubject(prefix, topic),
  consumer: consumerName(topic),
  msgId: messageId(source, id),
}));
process.stdout.write(`${JSON.stringify(out)}\n`);
