#!/usr/bin/python3
"""Writes a gs4d checkpoint whose canonical Gaussians are flat discs on the ground-truth surface
(tangent, opacity 0.95, the mesh's colors, Adam moments zeroed), to resume with `anima gs4d fit
--resume` and see where the fit moves them (docs/gaussianimate.md §3, session 25).

usage: SS=2 /usr/bin/python3 tools/gs4d_surface_init.py SRC/ckpt.h5 DATA/gt.h5 OUT/ckpt.h5 ITERS [SHIFT_PCT]
  SRC: a checkpoint of a one-frame fit of DATA; the run config becomes ITERS static steps,
  densification off, supersample $SS (also written to OUT/config.json); then
  anima gs4d fit --data DATA --out OUT --resume
"""
import os, sys, json, shutil, numpy as np, h5py
src, gt, out, iters = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
shift = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0  # start offset along the normal, % of diag
shutil.copy(src, out)
f = h5py.File(gt); V = f['vertices'][0].astype(np.float64); F = f['mesh/faces'][:].astype(np.int64); C = f['mesh/colors'][:].astype(np.float64)
diag = np.linalg.norm(V.max(0) - V.min(0))
a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
cr = np.cross(b - a, c - a); area = 0.5 * np.linalg.norm(cr, axis=1); n = cr / (2 * area[:, None] + 1e-30)
rng = np.random.default_rng(1); N = 3000
k = rng.choice(len(F), N, p=area / area.sum()); r1 = np.sqrt(rng.random(N)); r2 = rng.random(N)
w0, w1, w2 = 1 - r1, r1 * (1 - r2), r1 * r2
X = w0[:, None] * a[k] + w1[:, None] * b[k] + w2[:, None] * c[k]; nn = n[k]
X = X + nn * shift / 100 * diag
col = w0[:, None] * C[F[k, 0]] + w1[:, None] * C[F[k, 1]] + w2[:, None] * C[F[k, 2]]
sigma = 0.5 * np.sqrt(area.sum() / N)
# frame: t1, t2, n -> rotation matrix columns -> quaternion (w, x, y, z)
t1 = np.cross(nn, np.where(np.abs(nn[:, :1]) < 0.9, [[1, 0, 0]], [[0, 1, 0]])); t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
t2 = np.cross(nn, t1); Rm = np.stack([t1, t2, nn], 2)
def quat(R):
    w = np.sqrt(np.maximum(0, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = np.sqrt(np.maximum(0, 1 + R[0, 0] - R[1, 1] - R[2, 2])) / 2 * np.sign(R[2, 1] - R[1, 2])
    y = np.sqrt(np.maximum(0, 1 - R[0, 0] + R[1, 1] - R[2, 2])) / 2 * np.sign(R[0, 2] - R[2, 0])
    z = np.sqrt(np.maximum(0, 1 - R[0, 0] - R[1, 1] + R[2, 2])) / 2 * np.sign(R[1, 0] - R[0, 1])
    return np.array([w, x, y, z])
Q = np.array([quat(R) for R in Rm])
g = h5py.File(out, 'r+')
g['params/gaussians.means'][...] = X.astype(np.float32)
g['params/gaussians.scales'][...] = np.log(np.array([[sigma, sigma, 1e-5 * diag]] * N)).astype(np.float32)
g['params/gaussians.quats'][...] = Q.astype(np.float32)
g['params/gaussians.opacities'][...] = np.full((N, 1), 3.0, np.float32)
g['params/gaussians.colors'][...] = ((np.clip(col, 0, 1) * 0.8 - 0.5) / 0.28209479).reshape(N, 1, 3).astype(np.float32)
for grp in ('exp_avg', 'exp_avg_sq'):
    for key in g['optim/' + grp]:
        g['optim/' + grp + '/' + key][...] = 0
cfg = json.loads(g.attrs['config'])
cfg['train'].update(iters=iters, warmup=iters, refine_frac=0); cfg['model']['supersample'] = int(os.environ.get('SS', 2))
g.attrs['config'] = np.bytes_(json.dumps(cfg).encode()); g.attrs['step'] = 0; g['optim'].attrs['step'] = 0
print('sigma %.4f%% of diag' % (sigma / diag * 100))
json.dump(cfg, open(os.path.join(os.path.dirname(out) or '.', 'config.json'), 'w'), indent=1)
