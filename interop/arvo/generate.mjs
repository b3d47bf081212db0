#!/usr/bin/env node
// Generates wire-compatibility fixtures from the REAL arvo-core 2.2.13 package.
//
//   npm ci && node generate.mjs
//
// Determinism: by default the generator
//   * forces TZ=UTC,
//   * replaces `Date` so that `new Date()` / `Date.now()` (no arguments) return
//     FIXED_NOW (used by arvo-core's createTimestamp for default event times),
//   * replaces `crypto.randomUUID` (which the `uuid` package's v4 uses in Node)
//     with a counter producing valid v4 uuids 00000000-0000-4000-8000-00000000000N,
// all BEFORE arvo-core is loaded. The values arvo-core produces are still the
// values it really produced; only the entropy/clock sources are pinned. Set
// ARVO_FIXTURES_REAL_ENTROPY=1 to disable the patches (fixtures then differ
// on every run in ids/times).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, 'fixtures');

const FIXED_NOW_ISO = '2025-01-02T03:04:05.678Z';
const deterministic = !process.env.ARVO_FIXTURES_REAL_ENTROPY;

if (deterministic) {
  process.env.TZ = 'UTC';
  const RealDate = Date;
  const FIXED_NOW = RealDate.parse(FIXED_NOW_ISO);
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(FIXED_NOW);
      else super(...args);
    }
    static now() {
      return FIXED_NOW;
    }
  }
  globalThis.Date = FixedDate;

  const nodeCrypto = require('node:crypto');
  let counter = 0;
  nodeCrypto.randomUUID = () => {
    counter += 1;
    return `00000000-0000-4000-8000-${String(counter).padStart(12, '0')}`;
  };
}

// arvo-core logs to the console when there is no active OpenTelemetry span
// (logToSpan -> console.log, exceptionToSpan -> console.error). Silence that noise.
if (!process.env.ARVO_FIXTURES_VERBOSE) {
  console.log = () => {};
  console.error = () => {};
}

// Loaded only now so that `uuid` captures the patched randomUUID.
const arvo = require('arvo-core');
const { z } = require('zod');
const pako = require('pako');

const {
  ArvoEvent,
  ArvoOrchestrationSubject,
  ArvoOrchestrationSubjectContentSchema,
  createArvoEvent,
  createArvoContract,
  createSimpleArvoContract,
  createArvoOrchestratorContract,
  createArvoEventFactory,
  createArvoOrchestratorEventFactory,
  compareSemanticVersions,
  parseSemanticVersion,
  isValidArvoSemanticVersion,
  EventDataschemaUtil,
  ArvoOrchestratorEventTypeGen,
  ArvoDataContentType,
  validateURI,
  ArvoErrorSchema,
} = arvo;

const pkgVersion = (name) =>
  JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version;
const arvoCoreVersion = pkgVersion('arvo-core');
if (arvoCoreVersion !== '2.2.13') {
  throw new Error(`expected arvo-core 2.2.13, found ${arvoCoreVersion}`);
}

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------
const inflateSubject = (subject) =>
  new TextDecoder().decode(pako.inflate(Buffer.from(subject, 'base64')));

const errMessage = (fn) => {
  try {
    fn();
    return null;
  } catch (e) {
    return String(e && e.message !== undefined ? e.message : e);
  }
};

const writeFixture = (name, value) => {
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, name);
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(here, file)}\n`);
};

// A fixed error for systemError events: createArvoError copies name, message, stack.
const fixedError = (message, name = 'Error', stack = `${name}: ${message}\n    at fixture (generate.mjs:1:1)`) => {
  const e = name === 'TypeError' ? new TypeError(message) : new Error(message);
  e.stack = stack;
  return e;
};

// ---------------------------------------------------------------------------
// 1. Orchestration subjects
// ---------------------------------------------------------------------------
const subjects = [];
const addSubject = (name, call, subject) => {
  const json = inflateSubject(subject);
  const content = ArvoOrchestrationSubject.parse(subject);
  // 2.2.13's parse returns the raw JSON.parse result (zod is only used to validate),
  // so unknown keys such as execution.domain are NOT stripped. Record that as well.
  const zodParsed = ArvoOrchestrationSubjectContentSchema.parse(JSON.parse(json));
  subjects.push({ name, call, subject, json, content, zodParsed });
  return subject;
};

const FIXED_EXEC_ID = 'exec-fixed-0001';

const rootNoMeta = addSubject(
  'root-new-no-meta',
  "ArvoOrchestrationSubject.new({ orchestator: 'arvo.orc.calc.average', version: '1.0.0', initiator: 'com.test.service' })",
  ArvoOrchestrationSubject.new({
    orchestator: 'arvo.orc.calc.average',
    version: '1.0.0',
    initiator: 'com.test.service',
  }),
);

const rootWithMeta = addSubject(
  'root-new-with-meta',
  'ArvoOrchestrationSubject.new({ orchestator, version, initiator, meta: {redirectto, tenant, region} })',
  ArvoOrchestrationSubject.new({
    orchestator: 'arvo.orc.parent.flow',
    version: '1.2.3',
    initiator: 'com.test.service',
    meta: { redirectto: 'com.redirect.target', tenant: 'acme', region: 'eu-west-1' },
  }),
);

addSubject(
  'child-from-with-meta-overlay',
  "ArvoOrchestrationSubject.from({ orchestator: 'arvo.orc.calc.average', version: '2.0.0', subject: <root-new-with-meta>, meta: { tenant: 'override', step: '2' } })",
  ArvoOrchestrationSubject.from({
    orchestator: 'arvo.orc.calc.average',
    version: '2.0.0',
    subject: rootWithMeta,
    meta: { tenant: 'override', step: '2' },
  }),
);

addSubject(
  'child-from-no-extra-meta',
  "ArvoOrchestrationSubject.from({ orchestator: 'arvo.orc.child.flow', subject: <root-new-no-meta> }) (version omitted => '0.0.0')",
  ArvoOrchestrationSubject.from({
    orchestator: 'arvo.orc.child.flow',
    subject: rootNoMeta,
  }),
);

addSubject(
  'new-version-null',
  "ArvoOrchestrationSubject.new({ orchestator: 'arvo.orc.any.flow', version: null, initiator: 'com.test.service' })",
  ArvoOrchestrationSubject.new({
    orchestator: 'arvo.orc.any.flow',
    version: null,
    initiator: 'com.test.service',
  }),
);

addSubject(
  'create-2x-shape-fixed-id',
  'ArvoOrchestrationSubject.create({ orchestrator: {name, version}, execution: {id, initiator}, meta: {} })',
  ArvoOrchestrationSubject.create({
    orchestrator: { name: 'arvo.orc.calc.average', version: '1.0.0' },
    execution: { id: FIXED_EXEC_ID, initiator: 'com.test.service' },
    meta: {},
  }),
);

const create3xNull = addSubject(
  'create-3x-shape-domain-null',
  'ArvoOrchestrationSubject.create({ orchestrator, execution: {id, initiator, domain: null}, meta: {} })',
  ArvoOrchestrationSubject.create({
    orchestrator: { name: 'arvo.orc.calc.average', version: '1.0.0' },
    execution: { id: 'exec-fixed-0002', initiator: 'com.test.service', domain: null },
    meta: {},
  }),
);

const create3xDomain = addSubject(
  'create-3x-shape-domain-external-review',
  "ArvoOrchestrationSubject.create({ orchestrator, execution: {id, initiator, domain: 'external.review'}, meta: {redirectto} })",
  ArvoOrchestrationSubject.create({
    orchestrator: { name: 'arvo.orc.approval.flow', version: '3.1.4' },
    execution: { id: 'exec-fixed-0003', initiator: 'com.test.service', domain: 'external.review' },
    meta: { redirectto: 'com.approval.sink' },
  }),
);

addSubject(
  'create-long-and-unicode-meta',
  'ArvoOrchestrationSubject.create({ ..., meta: { long: 2000 chars, unicode, quotes } })',
  ArvoOrchestrationSubject.create({
    orchestrator: { name: 'arvo.orc.calc.average', version: '10.20.30' },
    execution: { id: 'exec-fixed-0004', initiator: 'com.test.service' },
    meta: {
      long: 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(56).slice(0, 2000),
      unicode: 'héllo wörld 日本語 🎉',
      quotes: 'say "hi" \\ back/slash\n newline\ttab',
      empty: '',
    },
  }),
);

addSubject(
  'child-from-3x-parent-with-domain',
  "ArvoOrchestrationSubject.from({ orchestator: 'arvo.orc.child.flow', version: '1.0.0', subject: <create-3x-shape-domain-external-review>, meta: {step:'1'} }) (2.2.13 drops the parent's domain)",
  ArvoOrchestrationSubject.from({
    orchestator: 'arvo.orc.child.flow',
    version: '1.0.0',
    subject: create3xDomain,
    meta: { step: '1' },
  }),
);

void create3xNull;
writeFixture('subjects.json', subjects);

// Subject failure messages (for reference of the texts).
const subjectErrors = [
  {
    name: 'create-bad-orchestrator-name',
    error: errMessage(() =>
      ArvoOrchestrationSubject.create({
        orchestrator: { name: 'bad', version: '1.0.0' },
        execution: { id: 'x', initiator: 'com.test.service' },
        meta: {},
      }),
    ),
  },
  {
    name: 'create-semicolon-in-id',
    error: errMessage(() =>
      ArvoOrchestrationSubject.create({
        orchestrator: { name: 'arvo.orc.calc.average', version: '1.0.0' },
        execution: { id: 'a;b', initiator: 'com.test.service' },
        meta: {},
      }),
    ),
  },
  {
    name: 'create-invalid-domain-accepted',
    note: 'domain is not part of the 2.2.13 schema, so any value passes and is serialized as given (error null = accepted)',
    error: errMessage(() =>
      ArvoOrchestrationSubject.create({
        orchestrator: { name: 'arvo.orc.calc.average', version: '1.0.0' },
        execution: { id: 'x', initiator: 'com.test.service', domain: 'NOT valid!' },
        meta: {},
      }),
    ),
  },
  { name: 'parse-not-base64', error: errMessage(() => ArvoOrchestrationSubject.parse('not a subject')) },
  {
    name: 'parse-valid-zlib-but-bad-schema',
    subject: Buffer.from(pako.deflate(new TextEncoder().encode('{"a":1}'))).toString('base64'),
    error: errMessage(() =>
      ArvoOrchestrationSubject.parse(Buffer.from(pako.deflate(new TextEncoder().encode('{"a":1}'))).toString('base64')),
    ),
  },
];

// ---------------------------------------------------------------------------
// 2. Contracts
// ---------------------------------------------------------------------------
const calcAddContract = createArvoContract({
  uri: '#/test/calc/add',
  type: 'com.calc.add',
  description: 'Adds two numbers',
  metadata: { owner: 'calc-team', tags: ['math', 'demo'] },
  versions: {
    '1.0.0': {
      accepts: z.object({ a: z.number(), b: z.number() }),
      emits: {
        'evt.calc.add.success': z.object({ sum: z.number() }),
      },
    },
    '2.0.0': {
      accepts: z.object({
        a: z.number().describe('First operand'),
        b: z.number().describe('Second operand'),
        precision: z.number().int().min(0).max(10).default(2),
      }),
      emits: {
        'evt.calc.add.success': z.object({ sum: z.number(), precision: z.number().int() }),
        'evt.calc.add.overflow': z.object({ limit: z.number(), message: z.string().nullable() }),
      },
    },
  },
});

const simpleContract = createSimpleArvoContract({
  uri: '#/test/simple/greet',
  type: 'greet.user',
  description: 'Greets a user',
  metadata: { team: 'frontdesk' },
  versions: {
    '1.0.0': {
      accepts: z.object({ name: z.string().min(1), lang: z.enum(['en', 'fr']).optional() }),
      emits: z.object({ greeting: z.string() }),
    },
  },
});

const averageOrcContract = createArvoOrchestratorContract({
  uri: '#/orc/calc/average',
  name: 'calc.average',
  description: 'Averages a list of numbers',
  metadata: { owner: 'calc-team' },
  versions: {
    '1.0.0': {
      init: z.object({ values: z.array(z.number()).min(1) }),
      complete: z.object({ average: z.number() }),
    },
  },
});

const describeVersioned = (v) => ({
  uri: v.uri,
  version: v.version,
  dataschema: v.dataschema,
  description: v.description,
  metadata: v.metadata,
  accepts: { type: v.accepts.type },
  emitTypes: v.emitList.map((e) => e.type),
  systemError: {
    type: v.systemError.type,
    dataschema: v.systemError.dataschema,
    // the zod schema object rendered with zod-to-json-schema (same as toJsonSchema does)
  },
});

const contracts = {
  _notes: [
    'toJsonSchema() of ArvoContract = { uri, description, metadata, versions: [ { version, accepts, systemError, emits, metadata } ] } (versions in insertion order)',
    'VersionedArvoContract.toJsonSchema() = { uri, description, version, metadata, accepts: {type, schema}, systemError: {type, schema}, emits: [ {type, schema} ] }',
    'schemas are produced by zod-to-json-schema 3.x with default options (JSON Schema draft-07 "$schema" key, additionalProperties:false for z.object)',
    'arvo-core 2.2.13 contracts have no "domain" field',
  ],
  'simple:greet.user': simpleContract.toJsonSchema(),
  'calc.add (2 versions)': calcAddContract.toJsonSchema(),
  'orchestrator:calc.average': averageOrcContract.toJsonSchema(),
  versioned: {
    'calc.add@1.0.0': calcAddContract.version('1.0.0').toJsonSchema(),
    'calc.add@2.0.0': calcAddContract.version('2.0.0').toJsonSchema(),
    'calc.average@1.0.0': averageOrcContract.version('1.0.0').toJsonSchema(),
  },
  info: {
    'calc.add': {
      uri: calcAddContract.uri,
      type: calcAddContract.type,
      description: calcAddContract.description,
      metadata: calcAddContract.metadata,
      systemError: { type: calcAddContract.systemError.type },
      sortedVersionsDESC: calcAddContract.getSortedVersionNumbers('DESC'),
      sortedVersionsASC: calcAddContract.getSortedVersionNumbers('ASC'),
      'version(latest)': calcAddContract.version('latest').version,
      'version(oldest)': calcAddContract.version('oldest').version,
      'version(any)': calcAddContract.version('any').version,
      'version(1.0.0)': describeVersioned(calcAddContract.version('1.0.0')),
      'version(2.0.0)': describeVersioned(calcAddContract.version('2.0.0')),
      'version(9.9.9) error': errMessage(() => calcAddContract.version('9.9.9')),
    },
    'simple:greet.user': {
      uri: simpleContract.uri,
      type: simpleContract.type,
      metadata: simpleContract.metadata,
      'version(1.0.0)': describeVersioned(simpleContract.version('1.0.0')),
    },
    'orchestrator:calc.average': {
      uri: averageOrcContract.uri,
      type: averageOrcContract.type,
      metadata: averageOrcContract.metadata,
      systemError: { type: averageOrcContract.systemError.type },
      typegen: {
        prefix: ArvoOrchestratorEventTypeGen.prefix,
        init: ArvoOrchestratorEventTypeGen.init('calc.average'),
        complete: ArvoOrchestratorEventTypeGen.complete('calc.average'),
        systemError: ArvoOrchestratorEventTypeGen.systemError('calc.average'),
      },
      'version(1.0.0)': describeVersioned(averageOrcContract.version('1.0.0')),
    },
    arvoErrorSchema: require('zod-to-json-schema').default(ArvoErrorSchema),
  },
  errors: {
    'no versions': errMessage(() => createArvoContract({ uri: '#/x', type: 'com.x.y', versions: {} })),
    "version '0.0.0'": errMessage(() =>
      createArvoContract({
        uri: '#/x',
        type: 'com.x.y',
        versions: { '0.0.0': { accepts: z.object({}), emits: {} } },
      }),
    ),
    'bad semver 1.0': errMessage(() =>
      createArvoContract({ uri: '#/x', type: 'com.x.y', versions: { '1.0': { accepts: z.object({}), emits: {} } } }),
    ),
    'bad type com.x': errMessage(() =>
      createArvoContract({ uri: '#/x', type: 'com.x', versions: { '1.0.0': { accepts: z.object({}), emits: {} } } }),
    ),
    'bad emit type evt_bad.x.y': errMessage(() =>
      createArvoContract({
        uri: '#/x',
        type: 'com.x.y',
        versions: { '1.0.0': { accepts: z.object({}), emits: { 'evt_bad.x.y': z.object({}) } } },
      }),
    ),
    'empty uri': errMessage(() =>
      createArvoContract({ uri: '', type: 'com.x.y', versions: { '1.0.0': { accepts: z.object({}), emits: {} } } }),
    ),
    'uri with space': errMessage(() =>
      createArvoContract({ uri: '#/a b', type: 'com.x.y', versions: { '1.0.0': { accepts: z.object({}), emits: {} } } }),
    ),
    'reserved arvo.orc accepts type': errMessage(() =>
      createArvoContract({
        uri: '#/x',
        type: 'arvo.orc.x',
        versions: { '1.0.0': { accepts: z.object({}), emits: {} } },
      }),
    ),
    'reserved arvo.orc emit type': errMessage(() =>
      createArvoContract({
        uri: '#/x',
        type: 'com.x.y',
        versions: { '1.0.0': { accepts: z.object({}), emits: { 'arvo.orc.x.done': z.object({}) } } },
      }),
    ),
    'orchestrator bad name': errMessage(() =>
      createArvoOrchestratorContract({
        uri: '#/x',
        name: 'Bad-Name',
        versions: { '1.0.0': { init: z.object({}), complete: z.object({}) } },
      }),
    ),
    'orchestrator single-segment name wf (type arvo.orc.wf)': errMessage(() =>
      createArvoOrchestratorContract({
        uri: '#/x',
        name: 'wf',
        versions: { '1.0.0': { init: z.object({}), complete: z.object({}) } },
      }),
    ),
    'orchestrator factory on plain contract': errMessage(() => createArvoOrchestratorEventFactory(calcAddContract.version('1.0.0'))),
    'empty emits map accepted': errMessage(() =>
      createArvoContract({ uri: '#/x', type: 'com.x.y', versions: { '1.0.0': { accepts: z.object({}), emits: {} } } }),
    ),
  },
};
writeFixture('contracts.json', contracts);

// ---------------------------------------------------------------------------
// 3. Events
// ---------------------------------------------------------------------------
const events = [];
const addEvent = (name, call, event) => {
  const record = { name, call, event: event.toJSON(), string: event.toString() };
  // For convenience: the inflated JSON of the subject when it is an orchestration subject.
  if (ArvoOrchestrationSubject.isValid(event.subject)) record.subjectJson = inflateSubject(event.subject);
  const parentSubject = event.data && event.data.parentSubject$$;
  if (typeof parentSubject === 'string') record.parentSubjectJson = inflateSubject(parentSubject);
  events.push(record);
  return event;
};

const T = '2024-06-01T12:30:45.123+05:30';

addEvent(
  'minimal-createArvoEvent',
  "createArvoEvent({ source, type, subject, data: {} }) (id = uuid v4, time = createTimestamp(), to = type)",
  createArvoEvent({ source: 'com.test.service', type: 'com.test.event', subject: 'test-subject', data: {} }),
);

addEvent(
  'all-fields-createArvoEvent',
  'createArvoEvent({ every field set, explicit id and +05:30 time })',
  createArvoEvent({
    id: 'evt-full-0001',
    time: T,
    source: 'com.test.service',
    type: 'com.test.event',
    subject: create3xNull,
    specversion: '1.0',
    datacontenttype: ArvoDataContentType,
    dataschema: '#/test/schema/1.0.0',
    data: { key: 'value', n: 1 },
    to: 'com.receiver.service',
    accesscontrol: 'role:admin;team:core',
    redirectto: 'com.redirect.service',
    executionunits: 12.5,
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
  }),
);

addEvent(
  'explicit-id-time-utc-z',
  "createArvoEvent({ id, time: '...Z', executionunits: 0 })",
  createArvoEvent({
    id: 'evt-z-0001',
    time: '2024-06-01T07:00:45Z',
    source: 'com.test.service',
    type: 'com.test.event',
    subject: 'subject-z',
    data: {},
    executionunits: 0,
  }),
);

addEvent(
  'custom-extensions',
  'createArvoEvent({...}, { strext, boolext, falseext, numext, intext, nullext })',
  createArvoEvent(
    {
      id: 'evt-ext-0001',
      time: T,
      source: 'com.test.service',
      type: 'com.test.event',
      subject: 'subject-ext',
      data: { x: 1 },
    },
    { strext: 'hello', boolext: true, falseext: false, numext: 42.5, intext: 7, nullext: null },
  ),
);

addEvent(
  'parentid-domain-as-2x-extensions',
  'createArvoEvent({...}, { parentid, domain }) (2.2.13 has no parentid/domain fields: they are plain extensions)',
  createArvoEvent(
    {
      id: 'evt-ext-0002',
      time: T,
      source: 'com.test.service',
      type: 'com.test.event',
      subject: create3xDomain,
      data: {},
    },
    { parentid: 'evt-parent-0001', domain: 'external.review' },
  ),
);

addEvent(
  'space-in-source-subject-to-redirectto-dataschema',
  'createArvoEvent({ source/subject/to/redirectto/dataschema containing spaces }) => encodeURI applied',
  createArvoEvent({
    id: 'evt-space-0001',
    time: T,
    source: 'com.test service',
    type: 'com.test.event',
    subject: 'order 123',
    to: 'com.to service',
    redirectto: 'com.redirect service',
    dataschema: '#/test schema/1.0.0',
    data: {},
  }),
);

addEvent(
  'already-percent-encoded-double-encoded',
  "createArvoEvent({ source: 'com.test%20svc', subject: 'a%20b', to: 'x%2Fy' }) => '%' re-encoded to '%25'",
  createArvoEvent({
    id: 'evt-pct-0001',
    time: T,
    source: 'com.test%20svc',
    type: 'com.test.event',
    subject: 'a%20b',
    to: 'x%2Fy',
    data: {},
  }),
);

addEvent(
  'unicode-data-and-subject',
  'createArvoEvent({ subject with é, data with unicode/emoji/escapes })',
  createArvoEvent({
    id: 'evt-uni-0001',
    time: T,
    source: 'com.test.service',
    type: 'com.test.event',
    subject: 'café-ünïcode',
    data: {
      greeting: 'héllo wörld',
      cjk: '日本語テキスト',
      emoji: '🎉👍🏽',
      escapes: 'quote " backslash \\ newline \n tab \t nul \u0000 bell \u0007 del \u007f',
      lineSep: 'a\u2028b\u2029c',
      'ключ': 'значение',
    },
  }),
);

addEvent(
  'nested-data',
  'createArvoEvent({ data: nested objects, arrays, numbers, null, booleans })',
  createArvoEvent({
    id: 'evt-nested-0001',
    time: T,
    source: 'com.test.service',
    type: 'com.test.event',
    subject: 'subject-nested',
    data: {
      obj: { a: 1, b: [1, 2.5, -3, 0], c: null, d: true, e: false, f: { g: { h: 'deep' } } },
      arr: [{ x: 1 }, [], {}, [null, 'str', 1.25, [true]]],
      emptyObj: {},
      emptyArr: [],
      str: '',
    },
  }),
);

addEvent(
  'number-formatting',
  'createArvoEvent({ data: numbers whose JS JSON formatting may differ from other languages })',
  createArvoEvent({
    id: 'evt-num-0001',
    time: T,
    source: 'com.test.service',
    type: 'com.test.event',
    subject: 'subject-num',
    data: {
      int: 100,
      negZero: -0,
      tenth: 0.1,
      third: 1 / 3,
      big: 1e21,
      bigInt: 9007199254740991,
      beyondSafe: 12345678901234567890,
      small: 1.5e-7,
      float1: 1.0,
      exp20: 1e20,
    },
    executionunits: 1e-7,
  }),
);

addEvent(
  'new-ArvoEvent-application-json-no-to',
  "new ArvoEvent({ ..., datacontenttype: 'application/json', to: null, ... }, data) (to may be null when content type is not the Arvo one)",
  new ArvoEvent(
    {
      id: 'evt-json-0001',
      time: T,
      source: 'com.test.service',
      specversion: '1.0',
      type: 'com.test.event',
      subject: 'subject-json',
      datacontenttype: 'application/json',
      dataschema: null,
      to: null,
      accesscontrol: null,
      redirectto: null,
      executionunits: null,
      traceparent: null,
      tracestate: null,
    },
    { plain: true },
  ),
);

addEvent(
  'new-ArvoEvent-datacontenttype-omitted-defaults',
  'new ArvoEvent({ ...no datacontenttype... }) => zod default applies',
  new ArvoEvent(
    {
      id: 'evt-default-ct-0001',
      time: T,
      source: 'com.test.service',
      specversion: '1.0',
      type: 'com.test.event',
      subject: 'subject-default-ct',
      dataschema: null,
      to: 'com.test.event',
      accesscontrol: null,
      redirectto: null,
      executionunits: null,
      traceparent: null,
      tracestate: null,
    },
    {},
  ),
);

// --- factories -------------------------------------------------------------
const addV1 = createArvoEventFactory(calcAddContract.version('1.0.0'));
const addV2 = createArvoEventFactory(calcAddContract.version('2.0.0'));
const fixedSubject = ArvoOrchestrationSubject.create({
  orchestrator: { name: 'com.calc.add', version: '1.0.0' },
  execution: { id: 'exec-fixed-0005', initiator: 'com.test.service' },
  meta: {},
});

addEvent(
  'factory-accepts-v1-explicit-subject',
  "createArvoEventFactory(calcAdd.version('1.0.0')).accepts({ id, time, source, subject, data: {a:1,b:2} })",
  addV1.accepts({
    id: 'evt-acc-0001',
    time: T,
    source: 'com.test.service',
    subject: fixedSubject,
    data: { a: 1, b: 2 },
  }),
);

addEvent(
  'factory-accepts-v2-default-subject-redirectto',
  "createArvoEventFactory(calcAdd.version('2.0.0')).accepts({ id, time, source, redirectto, data: {a, b} }) (subject = new({orchestator: accepts type, version, initiator: source, meta:{redirectto}}); precision default applied)",
  addV2.accepts({
    id: 'evt-acc-0002',
    time: T,
    source: 'com.test.service',
    redirectto: 'com.redirect.service',
    data: { a: 1.5, b: 2.25 },
  }),
);

addEvent(
  'factory-accepts-v1-strips-unknown-data-keys',
  "accepts({ data: {a:1, b:2, extra:'dropped'} }) => data is zod-parsed (unknown keys stripped); to, accesscontrol, executionunits given",
  addV1.accepts({
    id: 'evt-acc-0003',
    time: T,
    source: 'com.test.service',
    subject: fixedSubject,
    to: 'com.calc.handler',
    accesscontrol: 'user-1',
    executionunits: 3,
    data: { a: 1, b: 2, extra: 'dropped' },
  }),
);

addEvent(
  'factory-emits-v1-success',
  "createArvoEventFactory(calcAdd.version('1.0.0')).emits({ type: 'evt.calc.add.success', to, data: {sum:3} })",
  addV1.emits({
    id: 'evt-emit-0001',
    time: T,
    type: 'evt.calc.add.success',
    source: 'com.calc.add',
    subject: fixedSubject,
    to: 'com.test.service',
    executionunits: 1,
    data: { sum: 3 },
  }),
);

addEvent(
  'factory-emits-v2-overflow-default-subject',
  "emits({ type: 'evt.calc.add.overflow', no subject }) => subject = new({orchestator: emit type, version: '2.0.0', initiator: source})",
  addV2.emits({
    id: 'evt-emit-0002',
    time: T,
    type: 'evt.calc.add.overflow',
    source: 'com.calc.add',
    data: { limit: 1000, message: null },
  }),
);

addEvent(
  'factory-systemError-v1',
  "createArvoEventFactory(calcAdd.version('1.0.0')).systemError({ error: Error('Division by zero') with fixed stack, to })",
  addV1.systemError({
    id: 'evt-err-0001',
    time: T,
    source: 'com.calc.add',
    subject: fixedSubject,
    to: 'com.test.service',
    error: fixedError('Division by zero'),
  }),
);

addEvent(
  'factory-systemError-v2-typeerror-default-subject',
  "createArvoEventFactory(calcAdd.version('2.0.0')).systemError({ error: TypeError, no subject })",
  addV2.systemError({
    id: 'evt-err-0002',
    time: T,
    source: 'com.calc.add',
    error: fixedError('bad input', 'TypeError'),
  }),
);

const simpleFactory = createArvoEventFactory(simpleContract.version('1.0.0'));
addEvent(
  'simple-contract-accepts',
  "createArvoEventFactory(simple.version('1.0.0')).accepts({ data: {name:'Ada'} })",
  simpleFactory.accepts({
    id: 'evt-simple-0001',
    time: T,
    source: 'com.test.service',
    subject: 'subject-simple',
    data: { name: 'Ada' },
  }),
);
addEvent(
  'simple-contract-emits',
  "simple.emits({ type: 'evt.greet.user.success', data: {greeting} })",
  simpleFactory.emits({
    id: 'evt-simple-0002',
    time: T,
    type: 'evt.greet.user.success',
    source: 'com.greet.user',
    subject: 'subject-simple',
    data: { greeting: 'Hello Ada' },
  }),
);

const orcFactory = createArvoOrchestratorEventFactory(averageOrcContract.version('1.0.0'));

addEvent(
  'orchestrator-init-root',
  "createArvoOrchestratorEventFactory(average.version('1.0.0')).init({ source, data: {values:[1,2,3], parentSubject$$: null} }) (subject = new({orchestator:'arvo.orc.calc.average', version:'1.0.0', initiator: source}))",
  orcFactory.init({
    id: 'evt-init-0001',
    time: T,
    source: 'com.test.service',
    data: { values: [1, 2, 3], parentSubject$$: null },
  }),
);

addEvent(
  'orchestrator-init-root-redirectto',
  'init({ redirectto, data }) => subject.meta.redirectto = redirectto',
  orcFactory.init({
    id: 'evt-init-0002',
    time: T,
    source: 'com.test.service',
    redirectto: 'com.final.sink',
    data: { values: [4], parentSubject$$: null },
  }),
);

addEvent(
  'orchestrator-init-with-parent-subject',
  'init({ data: {values, parentSubject$$: <root-new-with-meta>} }) => subject = from(parent): initiator = parent orchestrator name, meta = parent meta + {redirectto: event.redirectto ?? parent initiator}',
  orcFactory.init({
    id: 'evt-init-0003',
    time: T,
    source: 'arvo.orc.parent.flow',
    data: { values: [10, 20], parentSubject$$: rootWithMeta },
  }),
);

addEvent(
  'orchestrator-init-with-parent-subject-and-redirectto',
  'init({ redirectto, data: {values, parentSubject$$: <root-new-no-meta>} }) => meta.redirectto = event.redirectto',
  orcFactory.init({
    id: 'evt-init-0004',
    time: T,
    source: 'arvo.orc.parent.flow',
    redirectto: 'com.custom.redirect',
    data: { values: [10, 20], parentSubject$$: rootNoMeta },
  }),
);

addEvent(
  'orchestrator-init-with-3x-parent-subject',
  "init({ data: {values, parentSubject$$: <create-3x-shape-domain-external-review>} }) (2.2.13's from() drops the parent's execution.domain)",
  orcFactory.init({
    id: 'evt-init-0005',
    time: T,
    source: 'arvo.orc.approval.flow',
    data: { values: [7], parentSubject$$: create3xDomain },
  }),
);

addEvent(
  'orchestrator-complete',
  "orcFactory.complete({ source, subject, to, data: {average: 2} }) (type = 'arvo.orc.calc.average.done')",
  orcFactory.complete({
    id: 'evt-done-0001',
    time: T,
    source: 'arvo.orc.calc.average',
    subject: create3xNull,
    to: 'com.test.service',
    executionunits: 0.5,
    data: { average: 2 },
  }),
);

addEvent(
  'orchestrator-systemError',
  "orcFactory.systemError({ error }) (type = 'sys.arvo.orc.calc.average.error', dataschema = uri/0.0.0)",
  orcFactory.systemError({
    id: 'evt-orcerr-0001',
    time: T,
    source: 'arvo.orc.calc.average',
    subject: create3xNull,
    to: 'com.test.service',
    error: fixedError('values must not be empty'),
  }),
);

writeFixture('events.json', events);

// Factory error messages (reference texts).
const factoryErrors = {
  'accepts invalid data': errMessage(() =>
    addV1.accepts({ source: 'com.test.service', subject: 's', data: { a: 'x', b: 2 } }),
  ),
  'emits unknown type': errMessage(() =>
    addV1.emits({ type: 'evt.calc.add.overflow', source: 'com.calc.add', subject: 's', data: { limit: 1 } }),
  ),
  'emits invalid data': errMessage(() =>
    addV1.emits({ type: 'evt.calc.add.success', source: 'com.calc.add', subject: 's', data: { sum: 'x' } }),
  ),
  'init invalid data (empty values)': errMessage(() =>
    orcFactory.init({ source: 'com.test.service', data: { values: [], parentSubject$$: null } }),
  ),
  'init missing parentSubject$$': errMessage(() =>
    orcFactory.init({ source: 'com.test.service', data: { values: [1] } }),
  ),
  'complete invalid data': errMessage(() =>
    orcFactory.complete({ source: 'arvo.orc.calc.average', subject: 's', data: { average: 'x' } }),
  ),
  "accepts with 2-segment source 'com.app' and no subject": errMessage(() =>
    addV1.accepts({ source: 'com.app', data: { a: 1, b: 2 } }),
  ),
};

// ---------------------------------------------------------------------------
// 4. Invalid / edge events
// ---------------------------------------------------------------------------
const baseContext = () => ({
  id: 'evt-base-0001',
  time: '2024-06-01T12:30:45.123+05:30',
  source: 'com.test.service',
  specversion: '1.0',
  type: 'com.test.event',
  subject: 'subject-base',
  datacontenttype: ArvoDataContentType,
  dataschema: null,
  to: 'com.receiver.service',
  accesscontrol: null,
  redirectto: null,
  executionunits: null,
  traceparent: null,
  tracestate: null,
});

// expect: 'reject' (reference says arvo rejects it) or 'accept' (probe).
const cases = [
  { name: 'empty-id', rule: 'id must be non-empty', expect: 'reject', ctx: { id: '' } },
  { name: 'time-without-offset', rule: 'time must be RFC3339 with offset', expect: 'reject', ctx: { time: '2024-06-01T12:30:45' } },
  { name: 'time-garbage', rule: 'time must be RFC3339 datetime', expect: 'reject', ctx: { time: 'not-a-time' } },
  { name: 'time-space-separator', rule: "time must use 'T' separator", expect: 'reject', ctx: { time: '2024-06-01 12:30:45+00:00' } },
  { name: 'time-lowercase-t-z', rule: 'time must be uppercase T/Z', expect: 'reject', ctx: { time: '2024-06-01t12:30:45z' } },
  { name: 'time-hour-only-offset', rule: 'offset must be HH:MM', expect: 'reject', ctx: { time: '2024-06-01T12:30:45+05' } },
  { name: 'time-invalid-date-feb-30', rule: 'time must be a real calendar date', expect: 'reject', ctx: { time: '2024-02-30T12:30:45Z' } },
  { name: 'time-hour-24', rule: 'time hour must be 00-23', expect: 'reject', ctx: { time: '2024-06-01T24:00:00Z' } },
  { name: 'time-second-60', rule: 'time seconds must be 00-59', expect: 'reject', ctx: { time: '2024-06-01T12:30:60Z' } },
  { name: 'time-utc-z', rule: "time with 'Z' is an offset", expect: 'accept', ctx: { time: '2024-06-01T07:00:45Z' } },
  { name: 'time-no-seconds', rule: 'zod 3.25 datetime: seconds optional', expect: 'accept', ctx: { time: '2024-06-01T12:30+05:30' } },
  { name: 'time-offset-without-colon', rule: 'zod 3.25 datetime: +HHMM accepted', expect: 'accept', ctx: { time: '2024-06-01T12:30:45+0530' } },
  { name: 'time-nanoseconds', rule: 'arbitrary fraction digits accepted', expect: 'accept', ctx: { time: '2024-06-01T12:30:45.123456789-08:00' } },
  { name: 'source-empty', rule: 'source must be non-empty', expect: 'reject', ctx: { source: '' } },
  { name: 'source-lone-percent', rule: 'source must pass validateURI (lone % fails)', expect: 'reject', ctx: { source: 'com.test%svc' } },
  { name: 'source-with-space', rule: 'source must pass validateURI (raw space fails)', expect: 'reject', ctx: { source: 'com.test svc' } },
  { name: 'source-percent-encoded-space', rule: 'already-encoded %20 passes validateURI', expect: 'accept', ctx: { source: 'com.test%20svc' } },
  { name: 'specversion-0.3', rule: "specversion must be exactly '1.0'", expect: 'reject', ctx: { specversion: '0.3' } },
  { name: 'specversion-empty', rule: 'specversion must be non-empty', expect: 'reject', ctx: { specversion: '' } },
  { name: 'type-two-segments', rule: 'type needs at least 3 dot segments', expect: 'reject', ctx: { type: 'com.test' } },
  { name: 'type-hyphen', rule: 'type must be lowercase alphanumeric segments (no -)', expect: 'reject', ctx: { type: 'com.test-x.event' } },
  { name: 'type-underscore', rule: 'type must be lowercase alphanumeric segments (no _)', expect: 'reject', ctx: { type: 'com.test_x.event' } },
  { name: 'type-uppercase', rule: 'type must be lowercase', expect: 'reject', ctx: { type: 'com.Test.event' } },
  { name: 'type-empty-segment', rule: 'type segments must be non-empty', expect: 'reject', ctx: { type: 'com..test.event' } },
  { name: 'type-empty', rule: 'type must be non-empty', expect: 'reject', ctx: { type: '' } },
  { name: 'subject-empty', rule: 'subject must be non-empty', expect: 'reject', ctx: { subject: '' } },
  { name: 'subject-lone-percent', rule: 'subject must pass validateURI', expect: 'reject', ctx: { subject: '100%' } },
  { name: 'subject-unencoded-unicode', rule: 'subject must pass validateURI (raw é fails)', expect: 'reject', ctx: { subject: 'café' } },
  { name: 'datacontenttype-text-plain', rule: "datacontenttype must contain 'application/cloudevents+json' or 'application/json'", expect: 'reject', ctx: { datacontenttype: 'text/plain' } },
  { name: 'datacontenttype-empty', rule: 'datacontenttype must be non-empty', expect: 'reject', ctx: { datacontenttype: '' } },
  { name: 'datacontenttype-json-with-params', rule: "contains 'application/json' => accepted", expect: 'accept', ctx: { datacontenttype: 'application/json; charset=utf-8' } },
  { name: 'dataschema-not-uri-valid', rule: 'dataschema must pass validateURI', expect: 'reject', ctx: { dataschema: '#/test schema/1.0.0' } },
  { name: 'dataschema-empty', rule: 'dataschema must be non-empty or null', expect: 'reject', ctx: { dataschema: '' } },
  { name: 'data-array', rule: 'data must be a JSON object (not array)', expect: 'reject', data: [1, 2, 3] },
  { name: 'data-null', rule: 'data must be a JSON object (not null)', expect: 'reject', data: null },
  { name: 'data-string', rule: 'data must be a JSON object (not string)', expect: 'reject', data: 'text' },
  { name: 'data-undefined-value', rule: 'data must round-trip through JSON (undefined value)', expect: 'reject', data: { a: undefined }, inputNote: 'data is {a: undefined} (not representable in JSON; shown as {} )' },
  { name: 'data-nan-value', rule: 'NaN serializes to null so round-trip check passes', expect: 'accept', data: { a: Number.NaN }, inputNote: 'data is {a: NaN} (shown as null in JSON)' },
  { name: 'to-uri-invalid', rule: 'to must pass validateURI', expect: 'reject', ctx: { to: 'com.receiver service' } },
  { name: 'to-empty', rule: 'to must be non-empty or null', expect: 'reject', ctx: { to: '' } },
  { name: 'to-null-with-arvo-content-type', rule: "to is required when datacontenttype is the Arvo one", expect: 'reject', ctx: { to: null } },
  { name: 'to-missing-key', rule: 'to is nullable but not optional in new ArvoEvent', expect: 'reject', ctx: { to: undefined } },
  { name: 'accesscontrol-empty', rule: 'accesscontrol must be non-empty or null', expect: 'reject', ctx: { accesscontrol: '' } },
  { name: 'redirectto-uri-invalid', rule: 'redirectto must pass validateURI', expect: 'reject', ctx: { redirectto: 'com.redirect%zz' } },
  { name: 'redirectto-empty', rule: 'redirectto must be non-empty or null', expect: 'reject', ctx: { redirectto: '' } },
  { name: 'executionunits-string', rule: 'executionunits must be number or null', expect: 'reject', ctx: { executionunits: '10' } },
  { name: 'executionunits-negative', rule: 'no sign constraint on executionunits', expect: 'accept', ctx: { executionunits: -5 } },
  { name: 'traceparent-empty', rule: 'traceparent must be non-empty or null', expect: 'reject', ctx: { traceparent: '' } },
  { name: 'tracestate-empty', rule: 'tracestate must be non-empty or null', expect: 'reject', ctx: { tracestate: '' } },
  { name: 'extension-key-uppercase', rule: 'extension keys must match ^[a-z0-9]+$', expect: 'reject', ext: { badKey: 'v' } },
  { name: 'extension-key-hyphen', rule: 'extension keys must match ^[a-z0-9]+$', expect: 'reject', ext: { 'bad-key': 'v' } },
  { name: 'extension-key-underscore', rule: 'extension keys must match ^[a-z0-9]+$', expect: 'reject', ext: { bad_key: 'v' } },
  { name: 'extension-value-object', rule: 'extension values must be string, bool, number or null', expect: 'reject', ext: { objext: { a: 1 } } },
  { name: 'extension-value-array', rule: 'extension values must be string, bool, number or null', expect: 'reject', ext: { arrext: [1] } },
  { name: 'extension-empty-string-value', rule: 'extension string values may be empty', expect: 'accept', ext: { emptyext: '' } },
  { name: 'extension-domain-empty-string', rule: "2.2.13 has no domain rule: domain '' as a custom extension is accepted (3.x rejects it)", expect: 'accept', ext: { domain: '' } },
  { name: 'extension-domain-invalid-chars', rule: "2.2.13 has no domain rule: 'Ext.Review!' as a custom extension is accepted", expect: 'accept', ext: { domain: 'Ext.Review!' } },
  { name: 'extension-parentid-empty-string', rule: "2.2.13 has no parentid rule: '' accepted", expect: 'accept', ext: { parentid: '' } },
  { name: 'extension-key-to-overrides-nothing', rule: "extension named 'to' is overwritten by the context 'to' (keeps position in key order)", expect: 'accept', ext: { to: 'com.ext.to' } },
  { name: 'context-parentid-domain-silently-dropped', rule: 'unknown context keys (parentid, domain) are stripped by zod, not errors', expect: 'accept', ctx: { parentid: 'evt-parent', domain: 'external.review' } },
];

const invalidEvents = [];
const acceptedEdgeEvents = [];
for (const c of cases) {
  const context = { ...baseContext(), ...(c.ctx ?? {}) };
  for (const [k, v] of Object.entries(c.ctx ?? {})) if (v === undefined) delete context[k];
  const data = 'data' in c ? c.data : { ok: true };
  const extensions = c.ext;
  const input = { context, data, ...(extensions !== undefined ? { extensions } : {}) };
  let error = null;
  let event = null;
  try {
    event = new ArvoEvent(context, data, extensions);
  } catch (e) {
    error = String(e.message);
  }
  const record = { name: c.name, input, rule: c.rule };
  if (c.inputNote) record.inputNote = c.inputNote;
  if (error !== null) {
    record.error = error;
    if (c.expect !== 'reject') record.surprise = 'expected to be accepted';
    invalidEvents.push(record);
  } else {
    record.event = event.toJSON();
    if (c.expect !== 'accept') record.surprise = 'arvo-core 2.2.13 accepted a case the reference says is rejected';
    acceptedEdgeEvents.push(record);
  }
}

// createArvoEvent-specific edge cases (encodeURI before validation).
const createCases = [
  {
    name: 'createArvoEvent-source-lone-percent',
    rule: 'createArvoEvent encodeURIs source, so a lone % becomes %25 and is accepted',
    params: { source: 'com.test%svc', type: 'com.test.event', subject: 's', data: {}, id: 'x', time: T },
  },
  {
    name: 'createArvoEvent-lone-surrogate-subject',
    rule: 'encodeURI throws URIError on a lone surrogate',
    params: { source: 'com.test.service', type: 'com.test.event', subject: 'a\uD800b', data: {}, id: 'x', time: T },
  },
  {
    name: 'createArvoEvent-to-empty-defaults-to-type',
    rule: "to: '' is falsy => to = encodeURI(type)",
    params: { source: 'com.test.service', type: 'com.test.event', subject: 's', to: '', data: {}, id: 'x', time: T },
  },
  {
    name: 'createArvoEvent-empty-accesscontrol',
    rule: "accesscontrol '' is passed through (?? null keeps '') and rejected",
    params: { source: 'com.test.service', type: 'com.test.event', subject: 's', accesscontrol: '', data: {}, id: 'x', time: T },
  },
  {
    name: 'createArvoEvent-executionunits-zero',
    rule: 'executionunits 0 kept (?? not ||)',
    params: { source: 'com.test.service', type: 'com.test.event', subject: 's', executionunits: 0, data: {}, id: 'x', time: T },
  },
  {
    name: 'createArvoEvent-redirectto-empty-to-null',
    rule: "redirectto '' is falsy => null",
    params: { source: 'com.test.service', type: 'com.test.event', subject: 's', redirectto: '', data: {}, id: 'x', time: T },
  },
];
for (const c of createCases) {
  const input = { createArvoEvent: c.params };
  try {
    const ev = createArvoEvent(c.params);
    acceptedEdgeEvents.push({ name: c.name, input, rule: c.rule, event: ev.toJSON() });
  } catch (e) {
    invalidEvents.push({ name: c.name, input, rule: c.rule, error: String(e.message) });
  }
}

writeFixture('invalid-events.json', invalidEvents);
writeFixture('accepted-edge-events.json', acceptedEdgeEvents);

// ---------------------------------------------------------------------------
// 5. semver + dataschema
// ---------------------------------------------------------------------------
const cmpPairs = [
  ['1.0.0', '1.0.0'],
  ['1.0.0', '2.0.0'],
  ['2.0.0', '1.0.0'],
  ['1.2.0', '1.10.0'],
  ['1.0.10', '1.0.9'],
  ['10.0.0', '9.99.99'],
  ['0.0.1', '0.0.0'],
];
const parseProbe = (v) => {
  try {
    return { input: v, result: parseSemanticVersion(v) };
  } catch (e) {
    return { input: v, error: String(e.message) };
  }
};
const sortInput = ['1.0.0', '10.0.0', '2.0.0', '1.10.0', '1.2.0', '0.0.1', '1.2.10', '1.2.9'];
const sortContract = createArvoContract({
  uri: '#/test/sort',
  type: 'com.test.sort',
  versions: Object.fromEntries(sortInput.map((v) => [v, { accepts: z.object({}), emits: {} }])),
});
const dataschemaInputs = [
  '#/test/calc/add/1.0.0',
  '#/test/calc/add/0.0.0',
  '#/orc/calc/average/10.20.30',
  'https://example.com/schemas/order/2.1.0',
  '1.0.0',
  '/1.0.0',
  '#/test/calc/add/1.0',
  '#/test/calc/add/v1.0.0',
  '#/test/calc/add/1.0.0/',
  '#/test/calc/add',
  '',
  'a b/1.0.0',
];
const semver = {
  compareSemanticVersions: cmpPairs.map(([a, b]) => ({ a, b, result: compareSemanticVersions(a, b) })),
  parseSemanticVersion: ['1.2.3', '01.02.03', '1.2.3.4', '1.2', 'v1.2.3', '1.2.x', '1.2.3-beta', ' 1.2.3'].map(parseProbe),
  isValidArvoSemanticVersion: ['1.2.3', '0.0.0', '01.2.3', '1.2', '1.2.3-beta', 'v1.2.3', '1.2.3.4', '999999.0.1'].map((v) => ({
    input: v,
    valid: isValidArvoSemanticVersion(v),
  })),
  getSortedVersionNumbers: {
    input: sortInput,
    DESC: sortContract.getSortedVersionNumbers('DESC'),
    ASC: sortContract.getSortedVersionNumbers('ASC'),
    latest: sortContract.version('latest').version,
    oldest: sortContract.version('oldest').version,
  },
  'EventDataschemaUtil.parse': dataschemaInputs.map((s) => ({
    input: s,
    result: EventDataschemaUtil.parse(s),
    isValid: EventDataschemaUtil.isValid(s),
  })),
  'EventDataschemaUtil.parse(event-like)': [
    { input: { dataschema: '#/x/y/1.0.0' }, result: EventDataschemaUtil.parse({ dataschema: '#/x/y/1.0.0' }) },
    { input: { dataschema: null }, result: EventDataschemaUtil.parse({ dataschema: null }) },
  ],
  'EventDataschemaUtil.build': [{ uri: '#/x/y', version: '1.2.3', result: EventDataschemaUtil.build('#/x/y', '1.2.3') }],
};
writeFixture('semver.json', semver);

// ---------------------------------------------------------------------------
// 6. URI
// ---------------------------------------------------------------------------
const uriInputs = [
  ' ',
  'a b',
  '%',
  'a%b',
  '%20',
  'a%20b',
  '%25',
  '%2520',
  'é',
  '%C3%A9',
  '%c3%a9',
  '%41',
  '%2F',
  '%2f',
  'a%2Fb',
  '%23',
  '#',
  '#/orc/calc/average',
  '?a=b&c',
  "!$&'()*+,;=:@/~-._",
  '[',
  ']',
  '`',
  '|',
  '{}',
  '\\',
  '"',
  '<>',
  '^',
  '🎉',
  '%F0%9F%8E%89',
  '%E0%A4%A',
  '%E0%A4%',
  '%FF',
  'eJyrVspLzE1VslIqSk1LLUrNS04tVqoFAEVOBqA=',
  'com.test.service',
  'https://example.com/a/b?c=d#e',
  '',
];
const uri = uriInputs.map((s) => {
  let encoded = null;
  let encodeError = null;
  try {
    encoded = encodeURI(s);
  } catch (e) {
    encodeError = String(e.message);
  }
  let decoded = null;
  let decodeError = null;
  try {
    decoded = decodeURI(s);
  } catch (e) {
    decodeError = String(e.message);
  }
  return {
    input: s,
    encodeURI: encoded,
    ...(encodeError ? { encodeURIError: encodeError } : {}),
    decodeURIThrows: decodeError !== null,
    decodeURI: decoded,
    validateURI: validateURI(s),
  };
});
writeFixture('uri.json', {
  _notes: [
    "validateURI is arvo-core 2.2.13's exported function: value === encodeURI(decodeURI(value)) (false if decodeURI throws)",
    'decodeURI does not decode escapes of reserved characters (; / ? : @ & = + $ , #), so %2F stays %2F, but %2f (lowercase) is then re-encoded by encodeURI to %252f',
  ],
  cases: uri,
});

// ---------------------------------------------------------------------------
// 7. misc reference texts
// ---------------------------------------------------------------------------
writeFixture('errors.json', {
  subjects: subjectErrors,
  factories: factoryErrors,
});

writeFixture('meta.json', {
  arvoCore: arvoCoreVersion,
  zod: pkgVersion('zod'),
  pako: pkgVersion('pako'),
  zodToJsonSchema: pkgVersion('zod-to-json-schema'),
  uuid: pkgVersion('uuid'),
  node: process.version,
  deterministic,
  fixedNow: deterministic ? FIXED_NOW_ISO : null,
  tz: process.env.TZ ?? null,
  ArvoDataContentType,
});
