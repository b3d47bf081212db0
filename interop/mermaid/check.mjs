// Parses and renders Mermaid diagrams with the real Mermaid packages pinned in package.json,
// under Node with jsdom.
//
//   node check.mjs diagrams.json      (or `-` / no argument: stdin)
//
// Input: `[{"name": "...", "text": "stateDiagram-v2\n..."}, ...]`.
// Output (stdout, one JSON document): `{"ok": bool, "results": [{"name", "mermaid", "ok",
// "stage", "error", "parents"}]}`, one result per diagram and Mermaid version: `stage` is
// `parse` or `render` when that step threw (`error` holds the message); `parents` maps every
// state id Mermaid knows to the id of the state it drew it inside (`null` at the top level),
// looking through the groups Mermaid makes for `--` regions and notes. Exit code 0 when every
// diagram parses and renders with every version, 1 otherwise, 2 on bad input.
//
// jsdom has no layout engine: `getBBox` / `getComputedTextLength` are stubbed with a size
// proportional to the text, which is enough for Mermaid's layout (dagre) to run to the end, so
// layout crashes are caught; the SVG is not pixel-accurate.

import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const VERSIONS = [
  ['mermaid', 'mermaid'],
  ['mermaid12', 'mermaid12'],
];

function installDom() {
  const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
  const w = dom.window;
  globalThis.window = w;
  globalThis.document = w.document;
  for (const key of ['CSSStyleSheet', 'Element', 'HTMLElement', 'SVGElement', 'DOMParser', 'XMLSerializer', 'MutationObserver']) {
    if (!(key in globalThis)) globalThis[key] = w[key];
  }
  const size = (node) => Math.max(1, (node.textContent || '').length * 8);
  const bbox = function () {
    return { x: 0, y: 0, width: size(this), height: 16 };
  };
  w.Element.prototype.getBBox = bbox;
  w.SVGElement.prototype.getBBox = bbox;
  w.Element.prototype.getComputedTextLength = function () {
    return size(this);
  };
  w.SVGElement.prototype.getComputedTextLength = w.Element.prototype.getComputedTextLength;
}

/** Every state's enclosing state, through region dividers and note groups. */
function parentsOf(db) {
  const nodes = db.getData ? db.getData().nodes : [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const isState = (n) => !['divider', 'noteGroup', 'note', 'stateStart', 'stateEnd'].includes(n.shape);
  const parents = {};
  for (const n of nodes) {
    if (!isState(n)) continue;
    let p = n.parentId ? byId.get(n.parentId) : undefined;
    while (p && !isState(p)) p = p.parentId ? byId.get(p.parentId) : undefined;
    parents[n.id] = p ? p.id : null;
  }
  return parents;
}

const arg = process.argv[2];
let diagrams;
try {
  diagrams = JSON.parse(readFileSync(arg && arg !== '-' ? arg : 0, 'utf8'));
  if (!Array.isArray(diagrams)) throw new Error('expected an array of {name, text}');
} catch (e) {
  console.error(`check.mjs: ${e.message}`);
  process.exit(2);
}

installDom();
const results = [];
let n = 0;
for (const [label, pkg] of VERSIONS) {
  const { default: mermaid } = await import(pkg);
  const version = JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
  for (const { name, text } of diagrams) {
    const result = { name, mermaid: `${label}@${version}`, ok: false, stage: 'parse', error: null, parents: null };
    try {
      await mermaid.parse(text);
      const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
      result.parents = parentsOf(diagram.db);
      result.stage = 'render';
      await mermaid.render(`d${n++}`, text);
      result.ok = true;
      result.stage = null;
    } catch (e) {
      result.error = String((e && e.message) || e).split('\n').slice(0, 3).join(' ');
    }
    results.push(result);
  }
}
const ok = results.every((r) => r.ok);
process.stdout.write(JSON.stringify({ ok, results }) + '\n');
process.exit(ok ? 0 : 1);
