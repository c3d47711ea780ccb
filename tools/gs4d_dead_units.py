#!/usr/bin/python3
# tools/gs4d_dead_units.py RUN/ckpt.h5 — reads a `gs4d fit` checkpoint's deformation MLP (numpy, h5py)
# and prints, per trunk layer, how many ReLU units are alive (> 0 for some canonical Gaussian at one
# of 9 times over [0, 1]), the weights' and biases' sizes, and how much Δμ varies over the Gaussians
# and over time (≈ 0: the deformation is one rigid motion; docs/gaussianimate.md §3, session 24).
# The run's config.json (next to the checkpoint) gives freq_x, freq_t and skip.
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); P = f['params']
import json, os
m = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), 'config.json')))['model']
cfg = dict(freq_x=m['freq_x'], freq_t=m['freq_t'], skip=m['skip'])
if cfg['freq_t'] < 0:
    sys.exit('model.freq_t = -1 (derived from the data) is not stored in config.json; rerun with it set')
mu = P['gaussians.means'][:].astype(np.float64)
L = sorted({int(k.split('.')[2]) for k in P if k.startswith('deform.layers.')})
def emb(x, K):
    e = (x[..., None] * (2.0 ** np.arange(K))).reshape(x.shape[0], -1)
    return np.concatenate([x, np.sin(e), np.cos(e)], -1)
alive = [np.zeros(P['deform.layers.%d.bias' % i].shape[0], bool) for i in L]
outs = []
for t in np.linspace(0, 1, 9):
    x = np.concatenate([emb(mu, cfg['freq_x']), emb(np.full((mu.shape[0], 1), t), cfg['freq_t'])], 1)
    h = x
    for i in L:
        if i == cfg['skip'] and i > 0: h = np.concatenate([x, h], 1)
        h = np.maximum(0, h @ P['deform.layers.%d.weight' % i][:].T + P['deform.layers.%d.bias' % i][:])
        alive[i] |= (h > 0).any(0)
    outs.append(h @ P['deform.mu.weight'][:].T + P['deform.mu.bias'][:])
for i in L:
    W = P['deform.layers.%d.weight' % i][:]; b = P['deform.layers.%d.bias' % i][:]
    print('layer %d: alive %3d/%d  |W| %.3g  bias mean %.3g min %.3g' % (i, alive[i].sum(), len(alive[i]), np.abs(W).mean(), b.mean(), b.min()))
o = np.stack(outs)
print('dmu: std over gaussians %.3g, over time %.3g, |bias| %s' % (o.std(1).mean(), o.std(0).mean(), np.abs(P['deform.mu.bias'][:])))
print('head |W| %.3g' % np.abs(P['deform.mu.weight'][:]).mean())
