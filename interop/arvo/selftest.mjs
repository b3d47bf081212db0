#!/usr/bin/env node
// Self-test of verify.mjs: a document built from the committed fixtures must verify,
// and tampered documents must be rejected (exit 1).
//
//   node selftest.mjs
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const load = (f) => JSON.parse(fs.readFileSync(path.join(here, 'fixtures', f), 'utf8'));

const baseDoc = () => ({
  subjects: load('subjects.json').map(({ name, subject, content }) => ({ name, subject, content })),
  events: load('events.json').map(({ event }) => event),
});

const run = (doc) => {
  const r = spawnSync(process.execPath, [path.join(here, 'verify.mjs'), '-'], {
    input: JSON.stringify(doc),
    encoding: 'utf8',
  });
  let report = null;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    // leave null
  }
  return { status: r.status, report, stderr: r.stderr };
};

const cases = [
  { name: 'fixtures verify ok', expect: 0, doc: baseDoc() },
  {
    name: 'subject content tampered (meta value)',
    expect: 1,
    kinds: ['subject-content', 'subject-bytes'],
    doc: (() => {
      const d = baseDoc();
      const s = d.subjects.find((x) => x.name === 'root-new-with-meta');
      s.content = { ...s.content, meta: { ...s.content.meta, tenant: 'evil' } };
      return d;
    })(),
  },
  {
    name: 'subject key order differs (bytes)',
    expect: 1,
    kinds: ['subject-bytes'],
    doc: (() => {
      const d = baseDoc();
      const s = d.subjects.find((x) => x.name === 'create-2x-shape-fixed-id');
      s.content = { meta: s.content.meta, orchestrator: s.content.orchestrator, execution: s.content.execution };
      return d;
    })(),
  },
  {
    name: 'subject unpadded base64 / garbage',
    expect: 1,
    kinds: ['subject-parse'],
    doc: { subjects: [{ subject: 'not a subject' }] },
  },
  {
    name: 'event time without offset',
    expect: 1,
    kinds: ['event-invalid'],
    doc: { events: [{ ...baseDoc().events[1], time: '2024-06-01T12:30:45' }] },
  },
  {
    name: 'event invalid type',
    expect: 1,
    kinds: ['event-invalid'],
    doc: { events: [{ ...baseDoc().events[1], type: 'com.test' }] },
  },
  {
    name: 'event missing "to" key',
    expect: 1,
    kinds: ['event-invalid'],
    doc: (() => {
      const { to, ...rest } = baseDoc().events[1];
      return { events: [rest] };
    })(),
  },
  {
    name: 'event 3.x domain invalid',
    expect: 1,
    kinds: ['event-3x-extension'],
    doc: { events: [{ ...baseDoc().events[1], parentid: 'evt-1', domain: 'Bad Domain' }] },
  },
  {
    name: 'event 3.x parentid/domain valid',
    expect: 0,
    doc: { events: [{ ...baseDoc().events[1], parentid: 'evt-1', domain: 'external.review' }] },
  },
  { name: 'input not JSON object', expect: 2, doc: [1, 2, 3] },
];

let passed = 0;
let failed = 0;
for (const c of cases) {
  const r = run(c.doc);
  let good = r.status === c.expect && r.report !== null && r.report.ok === (c.expect === 0);
  if (good && c.kinds) {
    const got = new Set(r.report.failures.map((f) => f.kind));
    good = c.kinds.every((k) => got.has(k));
  }
  if (good) {
    passed += 1;
    process.stdout.write(`ok   - ${c.name}\n`);
  } else {
    failed += 1;
    process.stdout.write(`FAIL - ${c.name}: exit ${r.status}, report ${JSON.stringify(r.report)}\n${r.stderr}\n`);
  }
}
process.stdout.write(`selftest: ${passed} passed, ${failed} failed\n`);
process.exitCode = failed === 0 ? 0 : 1;
