// Self-test of check.mjs: a well-formed diagram must pass with every pinned Mermaid version, and
// the construct Mermaid 11's layout crashes on (an arrow to a compound state inside a `--`
// region, mermaid-js/mermaid#4052) must fail with Mermaid 11 at the render stage.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./check.mjs', import.meta.url));
const run = (diagrams) => {
  const out = spawnSync(process.execPath, [script, '-'], { input: JSON.stringify(diagrams), encoding: 'utf8' });
  return { code: out.status, report: JSON.parse(out.stdout) };
};

const good = run([{ name: 'good', text: 'stateDiagram-v2\n    [*] --> a\n    state "a #lt;b#gt;" as a\n    a --> b : go #59; [g]\n' }]);
if (good.code !== 0 || !good.report.ok) throw new Error(`a good diagram failed: ${JSON.stringify(good.report)}`);

const crash = run([{
  name: 'mermaid#4052',
  text: 'stateDiagram-v2\n    state p {\n        state r1 {\n            [*] --> c\n            state c {\n                [*] --> x\n                state x\n            }\n        }\n        --\n        state r2 {\n            [*] --> y\n            state y\n        }\n    }\n',
}]);
const v11 = crash.report.results.find((r) => r.mermaid.startsWith('mermaid@11.'));
if (crash.code !== 1 || !v11 || v11.ok || v11.stage !== 'render' || !v11.error.includes("setting 'rank'")) {
  throw new Error(`the mermaid#4052 diagram did not fail to render with Mermaid 11: ${JSON.stringify(crash.report)}`);
}
console.log('selftest ok:', v11.error);
