// `service_handler` on the real Arvo (arvo-event-handler 2.2.13), to run side by side with
// `arvo-bench --only service_handler` in the same hour on the same machine.
//
// The one Arvo workload whose packages the registry still has: Arvo's 2.x orchestrator
// (`arvo-xstate`) and 3.x are not published (see ../../../shared/reference/arvo-bench.md), so
// the orchestrator workloads can only be compared with that page's reference medians. Running
// this next to ours says how fast the host runs Arvo today against the day of those medians
// (13,956 events/s for this workload): scale the reference orchestrator figures by it.
//
// As the reference harness: one `ArvoEventHandler` (com.calc.add {a, b} → evt.calc.add.success
// {sum}), `execute()` N times over a pool of 1,024 events built beforehand by the contract's
// event factory, each response checked for the exact sum, a warm-up of 10 % of N (at most
// 2,000) first; an OpenTelemetry context manager is registered, so Arvo logs to spans rather
// than printing every log record. One JSON line per run, the fields of `arvo-bench`.
//
//   npm ci
//   node bench-service.mjs [N]        # default 80000
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { context } = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { createArvoContract, createArvoEventFactory } = require('arvo-core');
const { createArvoEventHandler } = require('arvo-event-handler');
const { z } = require('zod');

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const POOL = 1024;
const n = Number(process.argv[2] || 80000);
const warmup = Math.min(Math.floor(n / 10), 2000);

const addContract = createArvoContract({
  uri: '#/calc/add',
  type: 'com.calc.add',
  versions: {
    '1.0.0': {
      accepts: z.object({ a: z.number(), b: z.number() }),
      emits: { 'evt.calc.add.success': z.object({ sum: z.number() }) },
    },
  },
});

const add = createArvoEventHandler({
  contract: addContract,
  executionunits: 1,
  handler: {
    '1.0.0': async ({ event }) => ({ type: 'evt.calc.add.success', data: { sum: event.data.a + event.data.b } }),
  },
});

const factory = createArvoEventFactory(addContract.version('1.0.0'));
const pool = Array.from({ length: POOL }, (_, i) =>
  factory.accepts({ source: 'com.bench.client', subject: `bench-${i}`, data: { a: i, b: 1 } }),
);

const run = async (count, samples) => {
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const out = await add.execute(pool[i % POOL]);
    const t1 = process.hrtime.bigint();
    if (samples) samples.push(Number(t1 - t0) / 1000);
    if (out.length !== 1 || out[0].data.sum !== (i % POOL) + 1) {
      throw new Error(`wrong response: ${JSON.stringify(out)}`);
    }
  }
};

await run(warmup, null);
const samples = [];
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
await run(n, samples);
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
samples.sort((a, b) => a - b);
const at = (p) => samples[Math.min(samples.length - 1, Math.ceil(p * samples.length) - 1)];
const round = (x, d) => Math.round(x * 10 ** d) / 10 ** d;
process.stdout.write(
  `${JSON.stringify({
    name: 'service_handler',
    stack: 'v2',
    otel: 'context manager, no SDK',
    workflows: n,
    events: n,
    wall_s: round(wall, 4),
    events_per_s: round(n / wall, 1),
    workflows_per_s: round(n / wall, 1),
    p50_us: round(at(0.5), 2),
    p99_us: round(at(0.99), 2),
    max_us: round(samples[samples.length - 1], 2),
    latency_samples: samples.length,
    peak_rss_mb: round(process.resourceUsage().maxRSS / 1024, 1),
    params: {
      pool: POOL,
      warmup,
      cpu_us_per_event: round(((cpu.user + cpu.system) / n), 3),
      arvo_event_handler: '2.2.13',
    },
  })}\n`,
);
