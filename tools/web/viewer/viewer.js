// tools/web/viewer/viewer.js — anima view's page: a three.js scene that shows what the server lists
// (/api/info: meshes, a run's frames, skinning weights, Gaussian PLYs) and, when the server runs a
// live simulation, draws the positions it streams over the WebSocket and sends the mouse's drags,
// pins and balls back (protocol: docs/viewer.md; byte layouts: tools/view_live.h).
//
// window.viewerStats is what the browser tests (tests/browser/) read: frames received and shown,
// frames per second, input-to-pixel latencies, error replies.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { PLYLoader } from 'three/addons/loaders/PLYLoader.js';

const FRAME_MAGIC = 0x31465641, TOPO_MAGIC = 0x31545641, FRAME_HEADER = 32;
const $ = (id) => document.getElementById(id);
const token = new URLSearchParams(location.search).get('token');
const q = token ? `?token=${encodeURIComponent(token)}` : '';

const stats = {
  ready: false, wsOpen: false, hello: null,
  framesReceived: 0, framesShown: 0, lastFrame: -1, lastAck: 0, fps: 0,
  latencies: [], errors: [], oks: 0, mode: 'none', dragVertex: -1,
};
window.viewerStats = stats;

// ---- three.js scene ----------------------------------------------------------------------------
const canvas = $('view');
// multisampling costs a software rasterizer (SwiftShader: headless Chromium, machines without a
// GPU) most of its frame time; a real GPU keeps it
function softwareGL() {
  const gl = document.createElement('canvas').getContext('webgl2');
  const ext = gl && gl.getExtension('WEBGL_debug_renderer_info');
  return !!ext && /swiftshader|llvmpipe|software/i.test(gl.getParameter(ext.UNMASKED_RENDERER_WEBGL));
}
const software = softwareGL();
const renderer = new THREE.WebGLRenderer({ canvas, antialias: !software, preserveDrawingBuffer: true });
// and it pays per pixel: there the canvas is drawn at half resolution (a quarter of the pixels)
renderer.setPixelRatio(software ? 0.5 * window.devicePixelRatio : window.devicePixelRatio);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0xeef1f6);
const camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
camera.position.set(0.6, 1.2, 2.4);
const controls = new OrbitControls(camera, canvas);
scene.add(new THREE.HemisphereLight(0xffffff, 0x667788, 1.6));
const sun = new THREE.DirectionalLight(0xffffff, 1.8);
sun.position.set(1, 3, 2);
scene.add(sun);
let ground = null;

function resize() {
  const w = window.innerWidth, h = window.innerHeight;
  renderer.setSize(w, h, false);
  camera.aspect = w / Math.max(h, 1);
  camera.updateProjectionMatrix();
}
window.addEventListener('resize', resize);
resize();

function frameCamera(center, extent) {
  controls.target.set(center[0], center[1], center[2]);
  camera.position.set(center[0] + 0.6 * extent, center[1] + 0.6 * extent, center[2] + 2.4 * extent);
  camera.near = extent / 100; camera.far = extent * 100;
  camera.updateProjectionMatrix();
  controls.update();
}

function addGround(center, extent, offset) {
  if (ground) scene.remove(ground);
  ground = new THREE.Mesh(new THREE.PlaneGeometry(6 * extent, 6 * extent),
    new THREE.MeshLambertMaterial({ color: 0xd8dce4 }));
  ground.rotation.x = -Math.PI / 2;
  ground.position.set(center[0], offset, center[2]);
  scene.add(ground);
}

function say(text) { $('msg').textContent = text; }

// ---- the render loop: counts the simulation frames it shows and the latency of inputs ----------
const pendingInputs = new Map(); // id -> time of the input event (performance.now())
let newFrame = false, shownThisSecond = 0, secondStart = performance.now();
function loop() {
  requestAnimationFrame(loop);
  controls.update();
  if (latestFrame) {
    newFrame = applyFrame(latestFrame);
    latestFrame = null;
  }
  renderer.render(scene, camera);
  const now = performance.now();
  stats.software = software;
  if (newFrame) {
    newFrame = false;
    stats.framesShown++;
    shownThisSecond++;
    // an input is on screen once a frame that applied it is drawn
    for (const [id, t] of pendingInputs)
      if (id <= stats.lastAck) {
        stats.latencies.push(now - t);
        if (stats.latencies.length > 1000) stats.latencies.shift();
        pendingInputs.delete(id);
      }
  }
  if (now - secondStart >= 1000) {
    stats.fps = shownThisSecond * 1000 / (now - secondStart);
    shownThisSecond = 0;
    secondStart = now;
    showStats();
  }
}

function median(a) {
  if (!a.length) return NaN;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}

function showStats() {
  let t = '';
  if (stats.mode === 'live') {
    const lat = stats.latencies.slice(-50);
    t = `sim frames shown: ${stats.fps.toFixed(1)} /s\n` +
        `input to pixel: ${lat.length ? median(lat).toFixed(0) + ' ms (median of last ' + lat.length + ')' : '-'}\n` +
        `sim t = ${live.t.toFixed(2)} s`;
  }
  $('stats').textContent = t;
}

// ---- live simulation ---------------------------------------------------------------------------
const live = { ws: null, mesh: null, geom: null, nobj_v: 0, topo: -1, t: 0, nextId: 1, pinMode: false,
               drag: null };

function send(msg, eventTime) {
  if (!live.ws || live.ws.readyState !== WebSocket.OPEN) return 0;
  const id = live.nextId++;
  msg.id = id;
  pendingInputs.set(id, eventTime ?? performance.now());
  if (pendingInputs.size > 500) pendingInputs.delete(pendingInputs.keys().next().value);
  live.ws.send(JSON.stringify(msg));
  return id;
}
window.viewerSend = send; // for the tests and the console

function onTopology(buf) {
  const h = new Uint32Array(buf, 0, 4);
  const [, topo, nv, nf] = h;
  const faces = new Uint32Array(buf, 16, 3 * nf);
  const colors = new Float32Array(buf.slice(16 + 12 * nf, 16 + 12 * nf + 12 * nv));
  const geom = new THREE.BufferGeometry();
  geom.setAttribute('position', new THREE.BufferAttribute(new Float32Array(3 * nv), 3));
  geom.setAttribute('color', new THREE.BufferAttribute(colors, 3));
  geom.setIndex(new THREE.BufferAttribute(new Uint32Array(faces), 1));
  if (live.mesh) { scene.remove(live.mesh); live.geom.dispose(); }
  live.geom = geom;
  live.mesh = new THREE.Mesh(geom, new THREE.MeshLambertMaterial({ vertexColors: true, side: THREE.DoubleSide }));
  live.mesh.frustumCulled = false;
  scene.add(live.mesh);
  live.topo = topo;
}

// frames arrive at the sim's rate (100 per second for dt 0.01), maybe faster than the screen's:
// the newest is kept and drawn by the next animation frame, older ones are dropped unseen
let latestFrame = null;
function onFrame(buf) {
  live.ws.send('{"type":"ready"}'); // flow control: the server sends the next frame
  const dv = new DataView(buf);
  if (dv.getUint32(4, true) !== live.topo || !live.geom) return;
  stats.framesReceived++;
  latestFrame = buf;
}

function applyFrame(buf) {
  const dv = new DataView(buf);
  if (dv.getUint32(4, true) !== live.topo || !live.geom) return false;
  const frame = dv.getUint32(8, true), ack = dv.getUint32(12, true), t = dv.getFloat64(16, true);
  const nv = dv.getUint32(24, true);
  live.nobj_v = dv.getUint32(28, true);
  const pos = live.geom.attributes.position;
  if (pos.count !== nv) return false;
  pos.array.set(new Float32Array(buf, FRAME_HEADER, 3 * nv));
  pos.needsUpdate = true;
  live.geom.computeVertexNormals();
  live.geom.computeBoundingSphere();
  live.t = t;
  stats.lastFrame = frame;
  stats.lastAck = Math.max(stats.lastAck, ack);
  return true;
}

// a rigged scene: the joint list and three sliders (Euler angles, degrees) that send the bone's
// local rotation as a rotation vector (the server's `joint` message); the chosen bone is drawn
const rig = { line: null, bones: null };
function setupRig(bones) {
  rig.bones = bones;
  const sel = $('joint');
  sel.replaceChildren(...bones.map((b, i) => Object.assign(document.createElement('option'), { value: String(i), textContent: b.name })));
  $('rigbox').classList.remove('hidden');
  const g = new THREE.BufferGeometry().setAttribute('position', new THREE.BufferAttribute(new Float32Array(6), 3));
  rig.line = new THREE.Line(g, new THREE.LineBasicMaterial({ color: 0xd02020, depthTest: false }));
  rig.line.renderOrder = 1;
  rig.line.frustumCulled = false;
  scene.add(rig.line);
  const angles = new Map(); // each bone's slider values, so switching bones keeps them
  const showBone = () => {
    const b = bones[+sel.value], a = angles.get(sel.value) || [0, 0, 0];
    rig.line.geometry.attributes.position.array.set([...b.head, ...b.tail]);
    rig.line.geometry.attributes.position.needsUpdate = true;
    ['jx', 'jy', 'jz'].forEach((id, i) => { $(id).value = String(a[i]); });
  };
  const sendJoint = () => {
    const a = ['jx', 'jy', 'jz'].map((id) => +$(id).value);
    angles.set(sel.value, a);
    const q = new THREE.Quaternion().setFromEuler(new THREE.Euler(...a.map((x) => x * Math.PI / 180), 'XYZ'));
    const th = 2 * Math.acos(Math.min(1, Math.abs(q.w))), s = Math.sin(th / 2) * Math.sign(q.w || 1);
    const r = s > 1e-9 ? [q.x / s * th, q.y / s * th, q.z / s * th] : [0, 0, 0];
    send({ type: 'joint', joint: +sel.value, rotation: r });
  };
  sel.onchange = showBone;
  for (const id of ['jx', 'jy', 'jz']) $(id).oninput = sendJoint;
  $('jointclear').onclick = () => { angles.delete(sel.value); showBone(); send({ type: 'joint', joint: +sel.value, clear: true }); };
  showBone();
}

function startLive() {
  stats.mode = 'live';
  $('live').classList.remove('hidden');
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws${q}`, 'anima-live');
  ws.binaryType = 'arraybuffer';
  live.ws = ws;
  // at most two frames on their way: a page that draws slower than the sim steps gets the newest
  // frames, not ones that waited in the socket buffers
  ws.onopen = () => { stats.wsOpen = true; ws.send('{"type":"flow","window":2}'); };
  ws.onclose = () => { stats.wsOpen = false; say('connection closed'); };
  ws.onmessage = (ev) => {
    if (typeof ev.data === 'string') {
      const m = JSON.parse(ev.data);
      if (m.type === 'hello') {
        stats.hello = m;
        $('title').textContent = `live: ${m.scene}`;
        frameCamera(m.center, m.extent);
        for (const p of m.planes) if (Math.abs(p.normal[1]) > 0.99) addGround(m.center, m.extent, p.offset / p.normal[1]);
        if (m.rig && m.bones) setupRig(m.bones);
        stats.ready = true;
      } else if (m.type === 'error') {
        stats.errors.push(m);
        if (stats.errors.length > 1000) stats.errors.shift();
        say(m.message);
      } else if (m.type === 'ok') stats.oks++;
      return;
    }
    const magic = new DataView(ev.data).getUint32(0, true);
    if (magic === TOPO_MAGIC) onTopology(ev.data);
    else if (magic === FRAME_MAGIC) onFrame(ev.data);
  };
  // mouse: a press on the object grabs its nearest vertex and drags it in the plane facing the camera
  const ray = new THREE.Raycaster(), ndc = new THREE.Vector2(), plane = new THREE.Plane(), hit = new THREE.Vector3();
  function pick(ev) {
    const r = canvas.getBoundingClientRect();
    ndc.set(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1);
    ray.setFromCamera(ndc, camera);
  }
  canvas.addEventListener('pointerdown', (ev) => {
    if (!live.mesh || ev.button !== 0) return;
    pick(ev);
    const hits = ray.intersectObject(live.mesh);
    const h = hits.find((x) => x.face && x.face.a < live.nobj_v);
    if (!h) return;
    const p = live.geom.attributes.position;
    let best = -1, bd = Infinity;
    for (const v of [h.face.a, h.face.b, h.face.c]) {
      if (v >= live.nobj_v) continue;
      const d = hit.fromBufferAttribute(p, v).distanceToSquared(h.point);
      if (d < bd) { bd = d; best = v; }
    }
    const t = performance.now();
    if (live.pinMode || ev.shiftKey) {
      send({ type: 'pin', center: h.point.toArray(), radius: 1.5 * stats.hello.drag_radius }, t);
      return;
    }
    controls.enabled = false;
    canvas.setPointerCapture(ev.pointerId);
    live.drag = best;
    stats.dragVertex = best;
    plane.setFromNormalAndCoplanarPoint(camera.getWorldDirection(new THREE.Vector3()), h.point);
    send({ type: 'drag', vertex: best, target: h.point.toArray() }, t);
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (live.drag === null) return;
    pick(ev);
    if (ray.ray.intersectPlane(plane, hit)) send({ type: 'drag', vertex: live.drag, target: hit.toArray() }, performance.now());
  });
  const end = () => {
    if (live.drag === null) return;
    live.drag = null;
    controls.enabled = true;
    send({ type: 'release' });
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);
  function dropBall() {
    if (!stats.hello) return;
    const c = new THREE.Vector3(...stats.hello.center), e = stats.hello.extent;
    const from = c.clone().add(new THREE.Vector3(0, 0.9 * e, 0));
    send({ type: 'drop_ball', pos: from.toArray(), vel: [0, -1.5, 0] });
  }
  $('ball').onclick = dropBall;
  window.addEventListener('keydown', (ev) => { if (ev.key === 'b') dropBall(); });
  $('pinmode').onclick = () => { live.pinMode = !live.pinMode; $('pinmode').textContent = `pin mode: ${live.pinMode ? 'on' : 'off'}`; };
  $('unpin').onclick = () => send({ type: 'unpin' });
  // for the browser tests: where on screen the object's top is (a point the mouse can grab), and
  // the camera's right vector (the world direction of a drag to the right)
  window.viewerTest = {
    screenOfTop() {
      // down the vertical line through the objects' centroid on screen: the first point that hits
      // the object, a little below its silhouette
      const p = live.geom.attributes.position, r = canvas.getBoundingClientRect(), c = new THREE.Vector3();
      for (let v = 0; v < live.nobj_v; v++) c.add(new THREE.Vector3().fromBufferAttribute(p, v));
      c.divideScalar(live.nobj_v).project(camera);
      const x = r.left + (c.x + 1) / 2 * r.width, hits = (y) => {
        pick({ clientX: x, clientY: y });
        return ray.intersectObject(live.mesh).some((h) => h.face && h.face.a < live.nobj_v);
      };
      for (let y = r.top + 2; y < r.bottom; y += 3)
        if (hits(y)) return hits(y + 10) ? { x, y: y + 10 } : { x, y };
      return { x, y: r.top + (1 - c.y) / 2 * r.height };
    },
    cameraRight() { return new THREE.Vector3().setFromMatrixColumn(camera.matrixWorld, 0).toArray(); },
    // the object vertex nearest to a world point, as shown now
    nearestVertex(pt) {
      const p = live.geom.attributes.position, x = new THREE.Vector3(), q = new THREE.Vector3(...pt);
      let best = -1, bd = Infinity;
      for (let v = 0; v < live.nobj_v; v++) {
        const d = x.fromBufferAttribute(p, v).distanceToSquared(q);
        if (d < bd) { bd = d; best = v; }
      }
      return best;
    },
  };
  $('reset').onclick = () => send({ type: 'reset' });
}

// ---- files: meshes, a run's frames, skinning weights, Gaussians --------------------------------
const shown = { objects: [], timer: null, frames: [], frame: 0, playing: true, splats: null };
const plyLoader = new PLYLoader();

function clearShown() {
  for (const o of shown.objects) { scene.remove(o); if (o.geometry) o.geometry.dispose(); }
  shown.objects = [];
  if (shown.timer) clearInterval(shown.timer);
  shown.timer = null;
  if (shown.splats) { scene.remove(shown.splats); shown.splats.dispose?.(); shown.splats = null; }
  $('handlebox').classList.add('hidden');
  $('playbox').classList.add('hidden');
}

function showGeometry(geom) {
  if (!geom.attributes.normal) geom.computeVertexNormals();
  const mat = new THREE.MeshStandardMaterial({ color: 0xcc7755, vertexColors: !!geom.attributes.color, roughness: 0.7,
                                              side: THREE.DoubleSide });
  const m = new THREE.Mesh(geom, mat);
  scene.add(m);
  shown.objects.push(m);
  return m;
}

function fitTo(geom) {
  geom.computeBoundingBox();
  const b = geom.boundingBox, c = b.getCenter(new THREE.Vector3()), s = b.getSize(new THREE.Vector3());
  frameCamera(c.toArray(), Math.max(s.x, s.y, s.z));
}

// a weight in [0, 1] as a colour: dark blue → teal → yellow (viridis-like)
function ramp(w) {
  const stops = [[0.27, 0.0, 0.33], [0.13, 0.57, 0.55], [0.99, 0.91, 0.14]];
  const x = Math.min(Math.max(w, 0), 1) * 2, i = Math.min(Math.floor(x), 1), f = x - i;
  return stops[i].map((a, k) => a + f * (stops[i + 1][k] - a));
}

async function showSkinning(name) {
  const r = await fetch(`/files/${name}${q}`);
  if (!r.ok) { say(await r.text()); return; }
  const s = await r.json();
  const geom = new THREE.BufferGeometry();
  geom.setAttribute('position', new THREE.BufferAttribute(new Float32Array(s.vertices), 3));
  geom.setIndex(s.faces);
  const nv = s.vertices.length / 3, m = s.handles, col = new Float32Array(3 * nv);
  geom.setAttribute('color', new THREE.BufferAttribute(col, 3));
  const palette = Array.from({ length: m }, (_, k) => new THREE.Color().setHSL(k / m, 0.65, 0.55));
  function paint(h) {
    for (let v = 0; v < nv; v++) {
      let c;
      if (h < 0) { // every handle: its colour weighted by its squared weight (the dominant one shows)
        c = [0, 0, 0];
        let sum = 0;
        for (let k = 0; k < m; k++) {
          const w = s.weights[v * m + k] ** 2;
          c[0] += w * palette[k].r; c[1] += w * palette[k].g; c[2] += w * palette[k].b; sum += w;
        }
        if (sum > 0) c = c.map((x) => x / sum);
      } else c = ramp(s.weights[v * m + h]);
      col.set(c, 3 * v);
    }
    geom.attributes.color.needsUpdate = true;
  }
  const sel = $('handle');
  sel.innerHTML = '<option value="-1">all (blended)</option>' + Array.from({ length: m }, (_, k) => `<option value="${k}">${k}</option>`).join('');
  sel.onchange = () => paint(+sel.value);
  $('handlebox').classList.remove('hidden');
  paint(-1);
  showGeometry(geom);
  fitTo(geom);
}

async function showGaussians(name) {
  const GS = await import('@mkkellogg/gaussian-splats-3d');
  const v = new GS.DropInViewer({ gpuAcceleratedSort: false, sharedMemoryForWorkers: false });
  await v.addSplatScene(`/files/${name}${q}`, { format: GS.SceneFormat.Ply, showLoadingUI: false });
  scene.add(v);
  shown.splats = v;
  const mesh = v.viewer.splatMesh; // the splats' own bounds (the drop-in object has no geometry)
  const box = mesh && mesh.computeBoundingBox ? mesh.computeBoundingBox(true) : null;
  if (box && !box.isEmpty()) {
    const c = box.getCenter(new THREE.Vector3()), s = box.getSize(new THREE.Vector3());
    frameCamera(c.toArray(), Math.max(s.x, s.y, s.z));
  }
}

async function showFrames(names) {
  // a sim run: frame_NNNNN.ply, played at 20 frames per second (anima sim writes every 5 steps of 0.01 s)
  const geoms = [];
  for (const n of names) geoms.push(await plyLoader.loadAsync(`/files/${n}${q}`));
  shown.frames = geoms;
  const mesh = showGeometry(geoms[0].clone());
  fitTo(geoms[0]);
  player(geoms.length, (i) => {
    mesh.geometry.attributes.position.array.set(geoms[i].attributes.position.array);
    mesh.geometry.attributes.position.needsUpdate = true;
    mesh.geometry.computeVertexNormals();
  });
}

// play/pause and a slider over n frames at 20 per second; setFrame(i) shows frame i
function player(n, setFrame) {
  const slider = $('slider');
  slider.max = n - 1;
  if (n < 2) return;
  $('playbox').classList.remove('hidden');
  const go = (i) => { shown.frame = i; slider.value = i; setFrame(i); };
  slider.oninput = () => go(+slider.value);
  $('play').onclick = () => { shown.playing = !shown.playing; $('play').textContent = shown.playing ? 'pause' : 'play'; };
  shown.timer = setInterval(() => { if (shown.playing) go((shown.frame + 1) % n); }, 50);
}

// a gt.h5 (surface and true bones over the frames), a rig.h5 (rest points by bone, the found
// skeleton over the IK frames) or point trajectories (gs4d): tools/view_h5.c's binary layout
async function showAnimation(item) {
  const r = await fetch(`/files/${item.name}${q}`);
  if (!r.ok) { say(await r.text()); return; }
  const buf = await r.arrayBuffer();
  const jl = new Uint32Array(buf, 4, 1)[0];
  const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, jl)));
  const A = {};
  let off = 8 + jl;
  for (const a of meta.arrays) {
    const n = a.shape.reduce((x, y) => x * y, 1);
    A[a.name] = { shape: a.shape, data: a.type === 'f32' ? new Float32Array(buf, off, n) : new Int32Array(buf, off, n) };
    off += 4 * n;
  }
  const P = A.positions, F = P.shape.length === 3 ? P.shape[0] : 1, N = P.shape.length === 3 ? P.shape[1] : P.shape[0];
  const geom = new THREE.BufferGeometry();
  geom.setAttribute('position', new THREE.BufferAttribute(P.data.slice(0, 3 * N), 3));
  let col = null;
  if (A.colors) col = A.colors.data.slice(0, 3 * N);
  else if (A.labels) { // each point its bone's colour
    const nb = Math.max(1, ...A.labels.data) + 1;
    col = new Float32Array(3 * N);
    for (let i = 0; i < N; i++) { const c = new THREE.Color().setHSL(A.labels.data[i] / nb, 0.65, 0.55); col.set([c.r, c.g, c.b], 3 * i); }
  }
  if (col) geom.setAttribute('color', new THREE.BufferAttribute(col, 3));
  geom.computeBoundingBox();
  const size = geom.boundingBox.getSize(new THREE.Vector3()), extent = Math.max(size.x, size.y, size.z);
  let body;
  if (A.faces) { geom.setIndex(new THREE.BufferAttribute(new Uint32Array(A.faces.data), 1)); body = showGeometry(geom); }
  else {
    body = new THREE.Points(geom, new THREE.PointsMaterial({ size: extent / 80, vertexColors: !!col, color: col ? 0xffffff : 0xcc7755 }));
    scene.add(body);
    shown.objects.push(body);
  }
  fitTo(geom);
  let J = null, FJ = 0, NJ = 0, bones = null, joints = null;
  if (A.joints && A.parents) {
    J = A.joints, FJ = J.shape.length === 3 ? J.shape[0] : 1, NJ = J.shape.length === 3 ? J.shape[1] : J.shape[0];
    const segs = [];
    for (let j = 0; j < NJ; j++) if (A.parents.data[j] >= 0) segs.push([A.parents.data[j], j]);
    const lg = new THREE.BufferGeometry();
    lg.setAttribute('position', new THREE.BufferAttribute(new Float32Array(6 * segs.length), 3));
    const pg = new THREE.BufferGeometry();
    pg.setAttribute('position', new THREE.BufferAttribute(new Float32Array(3 * NJ), 3));
    // drawn over the surface: a skeleton is inside it
    bones = new THREE.LineSegments(lg, new THREE.LineBasicMaterial({ color: 0x1030a0, depthTest: false }));
    joints = new THREE.Points(pg, new THREE.PointsMaterial({ color: 0xd02020, size: extent / 40, depthTest: false }));
    bones.renderOrder = joints.renderOrder = 1;
    bones.frustumCulled = joints.frustumCulled = false;
    scene.add(bones, joints);
    shown.objects.push(bones, joints);
    bones.userData.segs = segs;
  }
  const setFrame = (i) => {
    if (F > 1) {
      const f = Math.min(i, F - 1);
      geom.attributes.position.array.set(P.data.subarray(3 * N * f, 3 * N * (f + 1)));
      geom.attributes.position.needsUpdate = true;
      if (A.faces) geom.computeVertexNormals();
    }
    if (J) {
      const f = Math.min(i, FJ - 1), jp = J.data.subarray(3 * NJ * f, 3 * NJ * (f + 1));
      const lp = bones.geometry.attributes.position;
      bones.userData.segs.forEach(([a, b], k) => { lp.array.set(jp.subarray(3 * a, 3 * a + 3), 6 * k); lp.array.set(jp.subarray(3 * b, 3 * b + 3), 6 * k + 3); });
      lp.needsUpdate = true;
      joints.geometry.attributes.position.array.set(jp);
      joints.geometry.attributes.position.needsUpdate = true;
    }
  };
  setFrame(0);
  player(Math.max(F, FJ), setFrame);
  stats.animation = { kind: meta.kind, frames: Math.max(F, FJ), points: N, joints: NJ, bones: bones ? bones.userData.segs.length : 0 };
}

async function showFile(item, info) {
  clearShown();
  say('');
  try {
    if (item.kind === 'frames') await showFrames(info.files.filter((f) => f.kind === 'frame').map((f) => f.name));
    else if (item.kind === 'skinning') await showSkinning(item.name);
    else if (item.kind === 'gaussians') await showGaussians(item.name);
    else if (['motion', 'rig', 'trajectories'].includes(item.kind)) await showAnimation(item);
    else {
      const g = await plyLoader.loadAsync(`/files/${item.name}${q}`);
      showGeometry(g);
      fitTo(g);
    }
  } catch (e) {
    say(`${item.name}: ${e.message || e}`);
  }
  stats.ready = true;
}

async function main() {
  const info = await (await fetch(`/api/info${q}`)).json();
  if (info.live) startLive();
  const items = info.files.filter((f) => f.kind !== 'frame');
  if (info.files.some((f) => f.kind === 'frame')) items.unshift({ name: 'frames (animation)', kind: 'frames' });
  if (items.length) {
    if (!info.live) stats.mode = 'files';
    $('files').classList.remove('hidden');
    const sel = $('file');
    sel.innerHTML = items.map((f, i) => `<option value="${i}">${f.name} (${f.kind})</option>`).join('');
    sel.onchange = () => showFile(items[+sel.value], info);
    if (!info.live) await showFile(items[0], info);
  }
  requestAnimationFrame(loop);
}
main().catch((e) => say(String(e)));
