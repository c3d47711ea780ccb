// tests/gltf/validate.mjs — the Khronos glTF-Validator (npm gltf-validator) on each .glb given:
// prints every message (infos and hints too) and a summary line per file; exits 1 when any file
// has an error or a warning. usage: node tests/gltf/validate.mjs NODE_MODULES FILE.glb...
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [modules, ...files] = process.argv.slice(2);
const require = createRequire(join(resolve(modules), 'x.js'));
const validator = require('gltf-validator');
let bad = 0;
for (const f of files) {
  const report = await validator.validateBytes(new Uint8Array(readFileSync(f)), { uri: f, maxIssues: 1000 });
  const i = report.issues;
  for (const m of i.messages) console.log(`  ${f}: [${['error', 'warning', 'info', 'hint'][m.severity]}] ${m.code} ${m.pointer ?? ''}: ${m.message}`);
  const info = report.info ?? {};
  console.log(`${f}: ${i.numErrors} errors, ${i.numWarnings} warnings, ${i.numInfos} infos, ${i.numHints} hints; ` +
    `${info.totalVertexCount ?? '?'} vertices, ${info.animationCount ?? 0} animations, ${info.hasSkins ? 'skinned' : 'no skin'}, ` +
    `${info.hasMorphTargets ? 'morph targets' : 'no morph targets'}`);
  if (i.numErrors || i.numWarnings) bad++;
}
process.exit(bad ? 1 : 0);
