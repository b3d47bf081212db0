#!/usr/bin/env node
// Verifies JSON produced by the Rust port against the REAL arvo-core 2.2.13.
//
//   node verify.mjs doc.json        (or: node verify.mjs - < doc.json, or stdin when no argument)
//
// Input document:
//   {
//     "subjects": [ { "subject": "<base64>", "content": { ...expected parsed content... } }, ... ],
//     "events":   [ { ...ArvoEvent JSON (toJSON shape)... }, ... ]
//   }
// Both arrays are optional. A subject entry may omit "content" (then only parsing and
// encoding checks run) and may carry a "name" used in messages.
//
// Prints { ok, checked: {subjects, events}, failures: [{kind, index, message}], warnings: [...] }
// to stdout; exit code 0 only when ok (1 on any failure, 2 when the input is unusable).
import fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// arvo-core prints to console.log/console.error when no OpenTelemetry span is active;
// keep stdout pure JSON.
const realStdoutWrite = process.stdout.write.bind(process.stdout);
if (!process.env.ARVO_VERIFY_VERBOSE) {
  console.log = () => {};
  console.error = () => {};
} else {
  console.log = (...a) => process.stderr.write(`${a.join(' ')}\n`);
}

const arvo = require('arvo-core');
const pako = require('pako');
const { ArvoEvent, ArvoOrchestrationSubject } = arvo;

const failures = [];
const warnings = [];
const fail = (kind, index, message) => failures.push({ kind, index, message });
const warn = (kind, index, message) => warnings.push({ kind, index, message });

const emit = (report, code) => {
  realStdoutWrite(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = code;
};

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Key-order-insensitive structural equality of JSON values.
const deepEqual = (a, b) => {
  if (a === b) return true;
  if (typeof a !== typeof b) return false;
  if (a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  if (typeof a === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
  }
  return false; // numbers/strings/bools already compared with ===
};

const show = (v) => {
  const s = JSON.stringify(v);
  return s === undefined ? 'undefined' : s.length > 300 ? `${s.slice(0, 300)}…` : s;
};

const label = (entry, index) => (entry && typeof entry.name === 'string' ? `#${index} (${entry.name})` : `#${index}`);

// Canonical key layout of an orchestration subject (2.x: no domain; 3.x: domain last in execution).
const checkSubjectLayout = (obj) => {
  const problems = [];
  const keys = (o) => (isPlainObject(o) ? Object.keys(o) : null);
  const top = keys(obj);
  if (!top || top.join(',') !== 'orchestrator,execution,meta') {
    problems.push(`top-level keys ${show(top)} != ["orchestrator","execution","meta"]`);
  }
  const orc = keys(obj?.orchestrator);
  if (!orc || orc.join(',') !== 'name,version') {
    problems.push(`orchestrator keys ${show(orc)} != ["name","version"]`);
  }
  const exe = keys(obj?.execution);
  if (!exe || (exe.join(',') !== 'id,initiator' && exe.join(',') !== 'id,initiator,domain')) {
    problems.push(`execution keys ${show(exe)} != ["id","initiator"] (2.x) or ["id","initiator","domain"] (3.x)`);
  }
  return problems;
};

const DOMAIN_RE = /^[a-z0-9.]+$/;

// ---------------------------------------------------------------------------
// subjects
// ---------------------------------------------------------------------------
const verifySubject = (entry, index) => {
  const where = label(entry, index);
  if (!isPlainObject(entry) || typeof entry.subject !== 'string') {
    fail('subject-input', index, `${where}: entry must be an object with a string "subject"`);
    return;
  }
  const { subject } = entry;

  // 1. arvo-core parse (base64 -> inflate -> JSON.parse -> zod validation).
  let parsed;
  try {
    parsed = ArvoOrchestrationSubject.parse(subject);
  } catch (e) {
    fail('subject-parse', index, `${where}: ArvoOrchestrationSubject.parse threw: ${e.message}`);
    return;
  }

  // 2. Standard padded base64, canonical (what Buffer.toString('base64') produces).
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(subject) || subject.length % 4 !== 0) {
    fail('subject-base64', index, `${where}: not standard padded base64`);
  } else if (Buffer.from(subject, 'base64').toString('base64') !== subject) {
    fail('subject-base64', index, `${where}: base64 is not canonical (re-encoding differs)`);
  }

  // 3. Raw inflated JSON.
  let json;
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(pako.inflate(Buffer.from(subject, 'base64')));
  } catch (e) {
    fail('subject-inflate', index, `${where}: pako inflate / utf-8 decode failed: ${e.message}`);
    return;
  }
  const recompressed = Buffer.from(pako.deflate(new TextEncoder().encode(json))).toString('base64');
  if (recompressed !== subject) {
    warn(
      'subject-deflate-bytes',
      index,
      `${where}: payload is valid but pako.deflate(json) gives different bytes (compressor/level difference; not an error)`,
    );
  }

  for (const p of checkSubjectLayout(JSON.parse(json))) {
    fail('subject-key-order', index, `${where}: ${p}`);
  }
  const execution = parsed.execution ?? {};
  if (Object.prototype.hasOwnProperty.call(execution, 'domain')) {
    const d = execution.domain;
    if (!(d === null || (typeof d === 'string' && d.length > 0 && DOMAIN_RE.test(d)))) {
      fail('subject-domain', index, `${where}: execution.domain ${show(d)} must be null or match ^[a-z0-9.]+$ (3.x rule)`);
    }
  }

  // 4. Expected content.
  if (entry.content === undefined) return;
  // 2.2.13's parse returns the raw JSON.parse result, so every key (including a 3.x
  // execution.domain) is kept and compared.
  if (!deepEqual(parsed, entry.content)) {
    fail('subject-content', index, `${where}: parse() = ${show(parsed)} but content = ${show(entry.content)}`);
  }
  const expectedJson = JSON.stringify(entry.content);
  if (json !== expectedJson) {
    fail('subject-bytes', index, `${where}: inflated JSON ${show(json)} != JSON.stringify(content) ${show(expectedJson)}`);
  }
};

// ---------------------------------------------------------------------------
// events
// ---------------------------------------------------------------------------
const CORE_KEYS = ['id', 'time', 'source', 'specversion', 'type', 'subject', 'datacontenttype', 'dataschema'];
const ARVO_EXT_KEYS = ['to', 'accesscontrol', 'redirectto', 'executionunits'];
const OTEL_KEYS = ['traceparent', 'tracestate'];
const CONTEXT_KEYS = new Set([...CORE_KEYS, ...ARVO_EXT_KEYS, ...OTEL_KEYS]);

const verifyEvent = (input, index) => {
  const where = label(null, index);
  if (!isPlainObject(input)) {
    fail('event-input', index, `${where}: event must be a JSON object`);
    return;
  }

  // Split the flat toJSON() shape the way 2.2.13's constructor wants it:
  // new ArvoEvent(context = core + arvo ext + otel ext, data, customExtensions).
  // 2.2.13 knows nothing of parentid/domain: they go in as custom extensions.
  const context = {};
  const extensions = {};
  for (const [k, v] of Object.entries(input)) {
    if (k === 'data') continue;
    if (CONTEXT_KEYS.has(k)) context[k] = v;
    else extensions[k] = v;
  }
  const hasExtensions = Object.keys(extensions).length > 0;

  let event;
  try {
    event = new ArvoEvent(context, input.data, hasExtensions ? extensions : undefined);
  } catch (e) {
    fail('event-invalid', index, `${where} (id=${show(input.id)}): new ArvoEvent threw: ${e.message}`);
    return;
  }

  const out = event.toJSON();
  for (const key of Object.keys(input)) {
    if (!Object.prototype.hasOwnProperty.call(out, key)) {
      fail('event-roundtrip', index, `${where}: key "${key}" missing from toJSON()`);
    } else if (!deepEqual(out[key], input[key])) {
      fail('event-roundtrip', index, `${where}: key "${key}": toJSON() = ${show(out[key])}, input = ${show(input[key])}`);
    }
  }
  for (const key of Object.keys(out)) {
    if (!Object.prototype.hasOwnProperty.call(input, key)) {
      warn('event-defaulted-key', index, `${where}: toJSON() adds "${key}" = ${show(out[key])} not present in input`);
    }
  }

  // Key order is informative only: 2.2.13 emits custom extensions (incl. parentid/domain)
  // right after "time" and before "to", while 3.x puts parentid, domain after tracestate.
  const inOrder = Object.keys(input).filter((k) => Object.prototype.hasOwnProperty.call(out, k));
  const outOrder = Object.keys(out).filter((k) => Object.prototype.hasOwnProperty.call(input, k));
  if (inOrder.join(',') !== outOrder.join(',')) {
    warn('event-key-order', index, `${where}: input key order ${show(inOrder)} != 2.2.13 toJSON order ${show(outOrder)}`);
  }

  // 3.x-only extension rules (2.2.13 accepts any string/bool/number/null for them).
  if (Object.prototype.hasOwnProperty.call(input, 'parentid')) {
    const p = input.parentid;
    if (!(p === null || (typeof p === 'string' && p.length > 0))) {
      fail('event-3x-extension', index, `${where}: parentid ${show(p)} must be a non-empty string or null (3.x rule)`);
    }
  }
  if (Object.prototype.hasOwnProperty.call(input, 'domain')) {
    const d = input.domain;
    if (!(d === null || (typeof d === 'string' && d.length > 0 && DOMAIN_RE.test(d)))) {
      fail('event-3x-extension', index, `${where}: domain ${show(d)} must be null or match ^[a-z0-9.]+$ (3.x rule)`);
    }
  }

};

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------
const arg = process.argv[2];
let text;
try {
  text = !arg || arg === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(arg, 'utf8');
} catch (e) {
  fail('input', -1, `cannot read ${arg ?? 'stdin'}: ${e.message}`);
  emit({ ok: false, checked: { subjects: 0, events: 0 }, failures, warnings }, 2);
  process.exit();
}

let doc;
try {
  doc = JSON.parse(text);
} catch (e) {
  fail('input', -1, `input is not JSON: ${e.message}`);
}
if (doc !== undefined && !isPlainObject(doc)) fail('input', -1, 'input must be a JSON object');
const subjects = isPlainObject(doc) ? (doc.subjects ?? []) : [];
const events = isPlainObject(doc) ? (doc.events ?? []) : [];
if (!Array.isArray(subjects)) fail('input', -1, '"subjects" must be an array');
if (!Array.isArray(events)) fail('input', -1, '"events" must be an array');
if (failures.length) {
  emit({ ok: false, checked: { subjects: 0, events: 0 }, failures, warnings }, 2);
} else {
  subjects.forEach(verifySubject);
  events.forEach(verifyEvent);
  const ok = failures.length === 0;
  emit({ ok, checked: { subjects: subjects.length, events: events.length }, failures, warnings }, ok ? 0 : 1);
}
