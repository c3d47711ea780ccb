// tests/browser/viewer_test.mjs — `anima view` in a real browser: headless Chromium (Debian
// chromium, WebGL on SwiftShader) driven by puppeteer-core (build/web/node_modules, make web-deps).
// Runs ./anima view --scene scenes/<scene> on a free port and checks: the page loads with no console
// errors; the canvas is not blank; a mouse drag moves the simulated object in the drag direction
// (the server's /api/state); frames per second and input-to-pixel latency during the drag (printed);
// 100 malformed WebSocket messages each get an error reply, a client that disconnects mid-stream
// leaves the server running and a later client gets frames; static paths that climb out of the
// roots are refused; bound to a non-127.0.0.1 address the server wants its token.
// usage: node tests/browser/viewer_test.mjs [BUILD] [--scene drag.json] [--seconds S]
// Last line "N passed, M failed" (tests/run.sh); "skipped: ..." and 0 passed when chromium is absent.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const args = process.argv.slice(2);
const build = args.find((a) => !a.startsWith('--') && !/\.json$/.test(a) && !/^\d/.test(a)) || 'build';
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const sceneName = opt('--scene', 'drag.json'), seconds = +opt('--seconds', '3');
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

let passed = 0, failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
}
function finish() { console.log(`${passed} passed, ${failed} failed`); process.exit(failed ? 1 : 0); }

if (!existsSync(CHROMIUM)) {
  console.log(`skipped: no chromium at ${CHROMIUM} (tools/install-deps.sh installs it)`);
  finish();
}
const modules = path.join(root, build, 'web/node_modules');
if (!existsSync(path.join(modules, 'puppeteer-core'))) {
  check('puppeteer-core installed', false, `${modules} has none (run make web-deps)`);
  finish();
}
const require = createRequire(path.join(modules, 'x.js'));
const puppeteer = require('puppeteer-core');

// starts ./anima view; resolves with { proc, url } once it printed its URL
function startServer(extra) {
  return new Promise((resolve, reject) => {
    const proc = spawn(path.join(root, 'anima'), ['view', '--port', '0', ...extra], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const timer = setTimeout(() => reject(new Error(`anima view printed no URL in 60 s: ${out} ${err}`)), 60000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve({ proc, url: m[1], out: () => out, err: () => err }); }
    });
    proc.stderr.on('data', (d) => { err += d; });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`anima view exited ${code}: ${err}`)); });
  });
}
const alive = (p) => p.exitCode === null && p.signalCode === null;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };

const t0 = Date.now();
let server, browser;
try {
  server = await startServer(['--scene', `scenes/${sceneName}`]);
  const base = server.url.replace(/\/$/, '');
  const state = async (v) => (await fetch(`${base}/api/state${v !== undefined ? `?vertex=${v}` : ''}`)).json();

  // ---- HTTP: traversal refused, unknown files refused ------------------------------------------
  const probes = ['/../../../../etc/passwd', '/node_modules/../../../../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd',
                  '/files/../../etc/passwd', '/node_modules/three/../../../../../../etc/passwd', '/..%2f..%2fetc%2fpasswd'];
  let leaked = [];
  for (const p of probes) {
    // a raw request: fetch would normalize the dots away
    const body = await new Promise((resolve) => {
      import('node:net').then(({ connect }) => {
        const u = new URL(base);
        const s = connect(+u.port, u.hostname, () => s.end(`GET ${p} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`));
        let d = '';
        s.on('data', (x) => { d += x; });
        s.on('end', () => resolve(d));
        s.on('error', () => resolve(''));
      });
    });
    if (/^HTTP\/1\.1 200/.test(body) || body.includes('root:')) leaked.push(p);
  }
  check('path traversal refused', leaked.length === 0, leaked.length ? `served ${leaked.join(', ')}` : `${probes.length} probes`);

  // ---- the page ----------------------------------------------------------------------------------
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist', '--window-size=800,600'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 800, height: 600 });
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction(() => window.viewerStats && window.viewerStats.framesShown > 20, { timeout: 60000 });
  check('page loads with no console errors', consoleErrors.length === 0, consoleErrors.slice(0, 3).join(' | '));

  // ---- the canvas is not blank: luminance variance of its pixels ---------------------------------
  const variance = await page.evaluate(() => {
    const c = document.getElementById('view'), t = document.createElement('canvas');
    t.width = c.width, t.height = c.height;
    const g = t.getContext('2d');
    g.drawImage(c, 0, 0);
    const d = g.getImageData(0, 0, t.width, t.height).data;
    let s = 0, s2 = 0, n = 0;
    for (let i = 0; i < d.length; i += 16) { const y = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]; s += y; s2 += y * y; n++; }
    return s2 / n - (s / n) ** 2;
  });
  // the background alone is one colour (variance 0); the object and the floor add contrast
  check('canvas is not blank', variance > 20, `luminance variance ${variance.toFixed(1)}`);

  // ---- a mouse drag: grab the object near its top and pull right ---------------------------------
  const grab = await page.evaluate(() => window.viewerTest.screenOfTop());
  const before = await state();
  const right = await page.evaluate(() => window.viewerTest.cameraRight());
  await page.mouse.move(grab.x, grab.y);
  await page.mouse.down();
  const vertex = await page.evaluate(() => window.viewerStats.dragVertex);
  const v0 = (await state(vertex)).vertex;
  const lat0 = await page.evaluate(() => window.viewerStats.latencies.length);
  const shown0 = await page.evaluate(() => window.viewerStats.framesShown);
  const tStart = Date.now();
  const steps = Math.round(seconds * 1000 / 40);
  for (let i = 1; i <= steps; i++) { // 120 px to the right, then small moves to keep inputs coming
    const dx = Math.min(i, 20) * 6 + (i > 20 ? (i % 2) * 2 : 0);
    await page.mouse.move(grab.x + dx, grab.y);
    await sleep(40);
  }
  const elapsed = (Date.now() - tStart) / 1000;
  const shown1 = await page.evaluate(() => window.viewerStats.framesShown);
  const v1 = (await state(vertex)).vertex;
  const after = await state();
  const lats = await page.evaluate((k) => window.viewerStats.latencies.slice(k), lat0);
  await page.mouse.up();
  const dv = v1.map((x, i) => x - v0[i]), along = dv[0] * right[0] + dv[1] * right[1] + dv[2] * right[2];
  const dn = Math.hypot(...dv);
  check('mouse drag moves the dragged vertex right', vertex >= 0 && along > 0.05 && along > 0.7 * dn,
        `vertex ${vertex} moved ${dv.map((x) => x.toFixed(3)).join(', ')} m, ${along.toFixed(3)} m along the screen's right`);
  const dc = after.centroid.map((x, i) => x - before.centroid[i]);
  check('the object follows (centroid moves right)', dc[0] * right[0] + dc[1] * right[1] + dc[2] * right[2] > 0.005,
        `centroid moved ${dc.map((x) => x.toFixed(4)).join(', ')} m`);
  const fps = (shown1 - shown0) / elapsed;
  const st = await state();
  console.log(`info scene ${sceneName}: ${fps.toFixed(1)} sim frames shown per second in the browser during the drag; ` +
              `input-to-pixel latency median ${median(lats).toFixed(1)} ms, p90 ${pct(lats, 0.9).toFixed(1)} ms (${lats.length} inputs); ` +
              `sim step wall ${st.step_ms_median.toFixed(2)} ms, CPU ${st.step_cpu_ms_median.toFixed(2)} ms (median of the last 128), ` +
              `real-time ratio ${st.realtime.toFixed(2)}; targets >= 30 fps, <= 100 ms: ` +
              `${fps >= 30 && median(lats) <= 100 ? 'met' : 'NOT met'} (load average ${(await import('node:os')).loadavg()[0].toFixed(2)})`);
  check('frames per second and latency measured', fps > 0 && lats.length > 5, `${fps.toFixed(1)} fps, ${lats.length} latencies`);

  // ---- 100 malformed messages, then a client that leaves mid-stream ------------------------------
  const abuse = await page.evaluate(async (nobj) => {
    const bad = ['{', 'null', '[]', '42', '"drag"', '{"type":5}', '{"type":"drag"}', '{"type":"drag","vertex":-1,"target":[0,0,0]}',
      `{"type":"drag","vertex":${nobj},"target":[0,0,0]}`, '{"type":"drag","vertex":1.5,"target":[0,0,0]}',
      '{"type":"drag","vertex":0,"target":[0,0]}', '{"type":"drag","vertex":0,"target":[0,"x",0]}',
      '{"type":"drag","vertex":0,"target":[1e999,0,0]}', '{"type":"drag","vertex":0,"target":[NaN,0,0]}',
      '{"type":"drag","vertex":0,"target":[1e9,0,0]}', '{"type":"pin","center":[0,0,0],"radius":-1}',
      '{"type":"pin","center":[0,0,0],"radius":1e300}', '{"type":"drop_ball","pos":[0,1,0],"vel":[0,1e6,0]}',
      '{"type":"drop_ball","pos":[0,1,0]}', '{"type":"joint","joint":0,"rotation":[0,0,0]}', '{"type":"nope"}',
      '{"type":"drag","id":-3,"vertex":0,"target":[0,0,0]}', '{"type":"drag","id":"a","vertex":0,"target":[0,0,0]}',
      'x'.repeat(1 << 20), '{"type":"' + 'a'.repeat(5000) + '"}'];
    const ws = new WebSocket(`ws://${location.host}/ws`, 'anima-live');
    ws.binaryType = 'arraybuffer';
    let errors = 0, frames = 0;
    ws.onmessage = (e) => {
      if (typeof e.data === 'string') { if (JSON.parse(e.data).type === 'error') errors++; } else frames++;
    };
    await new Promise((r) => { ws.onopen = r; });
    for (let i = 0; i < 100; i++) {
      if (i === 50) ws.send(new Uint8Array([1, 2, 3, 4])); // binary: not accepted
      else ws.send(bad[i % bad.length]);
    }
    const t = performance.now();
    while (errors < 100 && performance.now() - t < 20000) await new Promise((r) => setTimeout(r, 50));
    const framesBefore = frames;
    ws.close(); // mid-stream: frames are flowing
    // a later client still gets its topology and frames
    const ws2 = new WebSocket(`ws://${location.host}/ws`, 'anima-live');
    ws2.binaryType = 'arraybuffer';
    let frames2 = 0;
    ws2.onmessage = (e) => { if (typeof e.data !== 'string') frames2++; };
    const t2 = performance.now();
    while (frames2 < 10 && performance.now() - t2 < 20000) await new Promise((r) => setTimeout(r, 50));
    ws2.close();
    return { errors, framesBefore, frames2 };
  }, (await state()).nobj_v);
  check('100 malformed messages: an error reply each', abuse.errors >= 100, `${abuse.errors} error replies`);
  check('a client leaving mid-stream; a later client gets frames', abuse.framesBefore > 0 && abuse.frames2 >= 10 && alive(server.proc),
        `${abuse.framesBefore} frames before leaving, ${abuse.frames2} to the next client`);
  // and a raw socket that drops in the middle of a large frame write
  await new Promise((resolve) => {
    import('node:net').then(({ connect }) => {
      const u = new URL(base);
      const s = connect(+u.port, u.hostname, () => s.write(`GET /ws HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: anima-live\r\n\r\n'));
      let n = 0;
      s.on('data', (d) => { n += d.length; if (n > 20000) { s.destroy(); resolve(); } });
      s.on('error', resolve);
      setTimeout(() => { s.destroy(); resolve(); }, 5000);
    });
  });
  await sleep(300);
  const sAfter = await state();
  const stillShown = await page.evaluate(async () => {
    const k = window.viewerStats.framesReceived;
    await new Promise((r) => setTimeout(r, 1000));
    return window.viewerStats.framesReceived - k;
  });
  check('server keeps running and streaming', alive(server.proc) && sAfter.frame > st.frame && stillShown > 0,
        `frame ${sAfter.frame}, the page got ${stillShown} frames in the last second`);
  await browser.close();
  browser = null;
  server.proc.kill('SIGTERM');
  await sleep(200);

  // ---- another interface: the token -------------------------------------------------------------
  // 127.0.0.2 is loopback on Linux but not the default 127.0.0.1: the server treats it as another
  // interface, so this checks the token without opening a port to the network
  const s2 = await startServer(['--bind', '127.0.0.2', '--scene', `scenes/${sceneName}`]);
  const u2 = new URL(s2.url), tok = u2.searchParams.get('token');
  const noTok = await fetch(`${u2.origin}/`), badTok = await fetch(`${u2.origin}/?token=${'0'.repeat(32)}`);
  const withTok = await fetch(s2.url);
  const cookie = (withTok.headers.get('set-cookie') || '').split(';')[0];
  const viaCookie = await fetch(`${u2.origin}/viewer.js`, { headers: { cookie } });
  const wsNoTok = await new Promise((resolve) => {
    import('node:net').then(({ connect }) => {
      const s = connect(+u2.port, u2.hostname, () => s.write(`GET /ws HTTP/1.1\r\nHost: ${u2.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'));
      let d = '';
      s.on('data', (x) => { d += x; });
      s.on('close', () => resolve(d));
      s.on('error', () => resolve(d));
      setTimeout(() => { s.destroy(); resolve(d); }, 3000);
    });
  });
  check('non-loopback bind: token required', tok && tok.length === 32 && noTok.status === 403 && badTok.status === 403 &&
        withTok.status === 200 && viaCookie.status === 200 && !/^HTTP\/1\.1 101/.test(wsNoTok),
        `no token ${noTok.status}, wrong ${badTok.status}, right ${withTok.status}, cookie ${viaCookie.status}, ws without: ${wsNoTok.split('\r\n')[0] || 'closed'}`);
  s2.proc.kill('SIGTERM');
} catch (e) {
  check('browser test ran', false, String(e && e.stack || e));
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server && alive(server.proc)) server.proc.kill('SIGTERM');
}
console.log(`info browser test: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
finish();
