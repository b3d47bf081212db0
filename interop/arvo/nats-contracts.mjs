// The contracts both sides of the NATS interop agree on, built with the real arvo-core 2.2.13.
// Their Rust twins are in orchestrator-nats/tests/arvo_interop.rs.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { createArvoContract, createArvoOrchestratorContract } = require('arvo-core');
const { z } = require('zod');

/** The Arvo service the Rust workflow calls: `com.interop.multiply` {a, b} → `evt.interop.multiply.success` {product}. */
export const multiplyContract = createArvoContract({
  uri: '#/interop/multiply',
  type: 'com.interop.multiply',
  description: 'Multiplies two numbers (an Arvo service hosted on NATS by nats-service.mjs)',
  versions: {
    '1.0.0': {
      accepts: z.object({ a: z.number(), b: z.number() }),
      emits: { 'evt.interop.multiply.success': z.object({ product: z.number() }) },
    },
  },
});

/**
 * The Rust workflow an Arvo client starts: `arvo.orc.interop.product` {a, b} → it calls the
 * multiply service → `arvo.orc.interop.product.done` {product, error}.
 */
export const productWorkflowContract = createArvoOrchestratorContract({
  uri: '#/orc/interop/product',
  name: 'interop.product',
  versions: {
    '1.0.0': {
      init: z.object({ a: z.number(), b: z.number() }),
      complete: z.object({ product: z.number().nullable(), error: z.string().nullable() }),
    },
  },
});
