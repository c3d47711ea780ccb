// tests/gltf/three_check.mjs — three.js's GLTFLoader in headless Chromium (puppeteer-core) on each
// FILE:N_VERTS:N_JOINTS:N_FRAMES[:REF:K] given: the page loads the file and reports the
// vertices of its meshes, the bones of its skins and the most keyframes of any animation track; a
// load error, a console error or other counts fail. With REF and K, the animation is played by
// three's AnimationMixer to keyframe K and every vertex as three poses it (morph targets and
// skinning applied, SkinnedMesh/Mesh.getVertexPosition) must match, within 1e-4, REF.obj's
// vertices, or with REF "spec" the skin posed by the glTF rules from the file's bytes (specPose). A local
// HTTP server serves three and the files (module scripts cannot come from file:// URLs). usage:
//   node tests/gltf/three_check.mjs NODE_MODULES CHROMIUM FILE:V:J:F[:REF.obj|spec:K]...
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [modules, chromium, ...specs] = process.argv.slice(2);
const require = createRequire(join(resolve(modules), 'x.js'));
const puppeteer = require('puppeteer-core');
// The pose of keyframe k of a skinned .glb by the glTF 2.0 rules, computed here from its bytes
// without three: each node's matrix T·R·S (animated values at keyframe k), world = parent · local,
// joint matrix = world(joint) · inverseBindMatrix, v' = Σ weight · jointMatrix · v. three's pose
// must agree: it reads our skins as the specification says they mean.
function specPose(file, k) {
  const b = readFileSync(file), jl = b.readUInt32LE(12), json = JSON.parse(b.subarray(20, 20 + jl).toString());
  const bin = b.subarray(20 + jl + 8);
  const acc = (i) => {
    const a = json.accessors[i], v = json.bufferViews[a.bufferView], n = { SCALAR: 1, VEC3: 3, VEC4: 4, MAT4: 16 }[a.type];
    const T = { 5121: Uint8Array, 5123: Uint16Array, 5125: Uint32Array, 5126: Float32Array }[a.componentType];
    const start = bin.byteOffset + v.byteOffset + (a.byteOffset ?? 0);
    return new T(bin.buffer.slice(start, start + a.count * n * T.BYTES_PER_ELEMENT));
  };
  const nodes = json.nodes.map((n) => ({ t: [...(n.translation ?? [0, 0, 0])], r: [...(n.rotation ?? [0, 0, 0, 1])], kids: n.children ?? [] }));
  for (const c of json.animations?.[0]?.channels ?? []) {
    const out = acc(json.animations[0].samplers[c.sampler].output), p = c.target.path;
    if (p === 'rotation') nodes[c.target.node].r = [...out.subarray(4 * k, 4 * k + 4)];
    if (p === 'translation') nodes[c.target.node].t = [...out.subarray(3 * k, 3 * k + 3)];
  }
  const mul = (a, m) => { const o = new Array(16).fill(0); for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) for (let q = 0; q < 4; q++) o[4 * j + i] += a[4 * q + i] * m[4 * j + q]; return o; };
  const local = ({ t, r: [x, y, z, w] }) => [1 - 2 * (y * y + z * z), 2 * (x * y + z * w), 2 * (x * z - y * w), 0, 2 * (x * y - z * w), 1 - 2 * (x * x + z * z),
    2 * (y * z + x * w), 0, 2 * (x * z + y * w), 2 * (y * z - x * w), 1 - 2 * (x * x + y * y), 0, t[0], t[1], t[2], 1];
  const world = [], visit = (i, pm) => { world[i] = pm ? mul(pm, local(nodes[i])) : local(nodes[i]); nodes[i].kids.forEach((c) => visit(c, world[i])); };
  json.scenes[json.scene ?? 0].nodes.forEach((i) => visit(i, null));
  const skin = json.skins[0], ibm = acc(skin.inverseBindMatrices);
  const jm = skin.joints.map((n, j) => mul(world[n], [...ibm.subarray(16 * j, 16 * j + 16)]));
  const at = json.meshes[0].primitives[0].attributes, pos = acc(at.POSITION), J = acc(at.JOINTS_0), W = acc(at.WEIGHTS_0), out = [];
  for (let v = 0; v < pos.length / 3; v++) {
    const x = [0, 0, 0];
    for (let s = 0; s < 4; s++) {
      const m = jm[J[4 * v + s]], w = W[4 * v + s];
      for (let r = 0; r < 3; r++) x[r] += w * (m[r] * pos[3 * v] + m[4 + r] * pos[3 * v + 1] + m[8 + r] * pos[3 * v + 2] + m[12 + r]);
    }
    out.push(...x);
  }
  return out;
}

const files = specs.map((s) => {
  const [f, v, j, n, ref, k] = s.split(':');
  const refpos = ref === 'spec' ? specPose(f, +k)
    : ref ? readFileSync(ref, 'utf8').split('\n').filter((l) => l.startsWith('v ')).flatMap((l) => l.split(/\s+/).slice(1, 4).map(Number)) : null;
  return { f, want: [+v, +j, +n], refpos, k: +k, ref };
});

const page_html = `<!doctype html><html><head><script type="importmap">
{"imports": {"three": "/three/build/three.module.js", "three/addons/": "/three/examples/jsm/"}}</script></head>
<body><script type="module">
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
window.check = (url) => new Promise((ok, fail) => new GLTFLoader().load(url, (g) => {
  let verts = 0; const bones = new Set();
  g.scene.traverse((o) => {
    if (o.isMesh || o.isPoints) verts += o.geometry.attributes.position.count;
    if (o.isSkinnedMesh) o.skeleton.bones.forEach((b) => bones.add(b.uuid));
  });
  let frames = 0;
  for (const a of g.animations) for (const t of a.tracks) frames = Math.max(frames, t.times.length);
  ok([verts, bones.size, frames, THREE.REVISION]);
}, undefined, (e) => fail(String(e))));
// every vertex of every mesh at keyframe k of animation 0, as three poses it (world space)
window.pose = (url, k) => new Promise((ok, fail) => new GLTFLoader().load(url, (g) => {
  const mixer = new THREE.AnimationMixer(g.scene), clip = g.animations[0];
  // played once and held at its end: a repeating clip wraps its last keyframe's time round to 0
  const action = mixer.clipAction(clip).setLoop(THREE.LoopOnce, 1);
  action.clampWhenFinished = true;
  action.play();
  mixer.setTime(clip.tracks[0].times[k]);
  g.scene.updateMatrixWorld(true);
  const out = [], v = new THREE.Vector3();
  g.scene.traverse((o) => {
    if (!o.isMesh) return;
    for (let i = 0; i < o.geometry.attributes.position.count; i++) {
      o.getVertexPosition(i, v).applyMatrix4(o.matrixWorld);
      out.push(v.x, v.y, v.z);
    }
  });
  ok(out);
}, undefined, (e) => fail(String(e))));
window.ready = true;
</script></body></html>`;

const server = createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0]);
  if (url === '/favicon.ico') return res.writeHead(204).end(); // the browser asks for one
  try {
    let body, type = 'application/octet-stream';
    if (url === '/') body = page_html, type = 'text/html';
    else if (url.startsWith('/three/')) body = readFileSync(join(resolve(modules), url)), type = 'text/javascript';
    else if (url.startsWith('/file/')) body = readFileSync(files[+url.slice(6)].f), type = 'model/gltf-binary';
    else throw new Error('not found');
    res.writeHead(200, { 'Content-Type': type }).end(body);
  } catch { res.writeHead(404).end(); }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
let bad = 0;
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + '/');
  await page.waitForFunction('window.ready === true', { timeout: 30000 });
  for (let i = 0; i < files.length; i++) {
    const { f, want } = files[i];
    try {
      const [v, j, n, rev] = await page.evaluate((u) => window.check(u), `/file/${i}`);
      let ok = v === want[0] && j === want[1] && n === want[2] && errors.length === 0, posed = '';
      if (files[i].refpos) {
        const p = await page.evaluate((u, k) => window.pose(u, k), `/file/${i}`, files[i].k), r = files[i].refpos;
        let worst = p.length === r.length ? 0 : Infinity;
        for (let c = 0; c < r.length && worst < Infinity; c++) worst = Math.max(worst, Math.abs(p[c] - r[c]));
        ok = ok && worst <= 1e-4;
        posed = `; posed at keyframe ${files[i].k}: max |three - ${files[i].ref === 'spec' ? 'glTF rules' : files[i].ref}| ${worst.toExponential(2)}`;
      }
      console.log(`three.js r${rev} GLTFLoader: ${f}: ${v} vertices, ${j} joints, ${n} animation frames${posed}` +
        (ok ? '' : `; expected ${want.join(', ')}${errors.length ? '; console errors: ' + errors.join(' | ') : ''}`));
      if (!ok) bad++;
    } catch (e) { console.log(`three.js GLTFLoader: ${f}: failed to load: ${e}`); bad++; }
    errors.length = 0;
  }
} finally { await browser.close(); server.close(); }
process.exit(bad ? 1 : 0);
