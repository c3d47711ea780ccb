#!/usr/bin/python3
"""Per-Gaussian signed depth against the ground-truth surface, binned by tangential extent and by
the surface's radius of curvature (docs/gaussianimate.md §3, session 25).

usage: /usr/bin/python3 tools/gs4d_inset.py RUN/canonical.ply DATA/gt.h5   (a static, one-frame fit)
"""
import sys, numpy as np, h5py, torch
ply, gt = sys.argv[1], sys.argv[2]
raw = open(ply, 'rb').read(); hdr = raw.find(b'end_header\n') + 11
if hdr < 11:
    sys.exit('%s: no PLY header' % ply)
# a standard 3DGS PLY of float properties, found by name (any SH degree)
props = [l.split()[-1].decode() for l in raw[:hdr].split(b'\n') if l.startswith(b'property float ')]
need = ['x', 'y', 'z', 'opacity', 'scale_0', 'scale_1', 'scale_2', 'rot_0', 'rot_1', 'rot_2', 'rot_3']
if b'binary_little_endian' not in raw[:hdr] or any(n not in props for n in need) or \
        len(props) != raw[:hdr].count(b'property '):
    sys.exit('%s: not an anisotropic 3DGS PLY of float properties (%s)' % (ply, ' '.join(props)))
P = np.frombuffer(raw[hdr:], np.float32).reshape(-1, len(props)).astype(np.float64)
col = {n: props.index(n) for n in need}
mu = P[:, [col['x'], col['y'], col['z']]]; op = 1 / (1 + np.exp(-P[:, col['opacity']]))
S = np.exp(P[:, [col['scale_0'], col['scale_1'], col['scale_2']]]); q = P[:, [col['rot_0'], col['rot_1'], col['rot_2'], col['rot_3']]]
q = q / np.linalg.norm(q, axis=1, keepdims=True)
w, x, y, z = q.T
R = np.stack([np.stack([1-2*(y*y+z*z), 2*(x*y-w*z), 2*(x*z+w*y)], -1),
              np.stack([2*(x*y+w*z), 1-2*(x*x+z*z), 2*(y*z-w*x)], -1),
              np.stack([2*(x*z-w*y), 2*(y*z+w*x), 1-2*(x*x+y*y)], -1)], 1)  # columns = axes
f = h5py.File(gt); V = f['vertices'][0].astype(np.float64); F = f['mesh/faces'][:].astype(np.int64)
diag = np.linalg.norm(V.max(0) - V.min(0))
# dense surface samples with face normals
rng = np.random.default_rng(0); a, b, c = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1); n = np.cross(b - a, c - a); n /= np.linalg.norm(n, axis=1, keepdims=True) + 1e-30
k = rng.choice(len(F), 400000, p=area / area.sum()); r1 = np.sqrt(rng.random(len(k))); r2 = rng.random(len(k))
X = (1 - r1)[:, None] * a[k] + (r1 * (1 - r2))[:, None] * b[k] + (r1 * r2)[:, None] * c[k]; N = n[k]
Xt = torch.tensor(X); idx = []
for i in range(0, len(mu), 500):
    idx.append(torch.cdist(torch.tensor(mu[i:i+500]), Xt).argmin(1))
idx = torch.cat(idx).numpy()
d = np.einsum('ij,ij->i', mu - X[idx], N[idx]) / diag * 100  # signed, % of diag (outward normals assumed)
order = np.argsort(S, 1); smin = np.take_along_axis(S, order[:, :1], 1)[:, 0]; smid = np.take_along_axis(S, order[:, 1:2], 1)[:, 0]; smax = np.take_along_axis(S, order[:, 2:], 1)[:, 0]
nrm = np.take_along_axis(R, order[:, None, :1].repeat(3, 1), 2)[:, :, 0]
align = np.abs(np.einsum('ij,ij->i', nrm, N[idx]))
keep = op > 0.5
print('gaussians %d, opaque(>0.5) %d; signed depth median %.3f%% (all) %.3f%% (opaque); frac inside %.3f' % (len(mu), keep.sum(), np.median(d), np.median(d[keep]), (d < 0).mean()))
print('median axes (%% diag): min %.3f mid %.3f max %.3f; |disc normal . surface normal| median %.3f' % tuple([np.median(s[keep]) / diag * 100 for s in (smin, smid, smax)] + [np.median(align[keep])]))
ext = np.sqrt(smid * smax) / diag * 100
for lo, hi in [(0, 0.3), (0.3, 0.5), (0.5, 0.8), (0.8, 1.2), (1.2, 2), (2, 10)]:
    m = keep & (ext >= lo) & (ext < hi)
    if m.sum(): print('tangential extent %.1f-%.1f%%: n %4d, median depth %.3f%%, align %.3f' % (lo, hi, m.sum(), np.median(d[m]), np.median(align[m])))
# local surface thickness proxy: distance from sample point to the opposite side along -normal is hard; use curvature via normal variation among nearby samples
# local curvature at each Gaussian's foot: normals of samples within rho of the foot
rho = 0.015 * diag; foot = torch.tensor(X[idx]); nf = N[idx]; kap = np.zeros(len(mu))
Nt = torch.tensor(N)
for i in range(0, len(mu), 200):
    D = torch.cdist(foot[i:i+200], Xt)
    for j in range(D.shape[0]):
        m = (D[j] < rho) & (D[j] > 1e-9)
        if m.sum() < 5: kap[i+j] = np.nan; continue
        dn = (Nt[m] - torch.tensor(nf[i+j])).norm(dim=1); dx = D[j][m]
        kap[i+j] = float(torch.median(dn / dx))
Rc = 1 / kap / diag * 100
print('radius of curvature at the foot (%% diag) quantiles 10/50/90: %.2f %.2f %.2f' % tuple(np.nanpercentile(Rc, [10, 50, 90])))
for lo, hi in [(0, 2), (2, 4), (4, 8), (8, 16), (16, 1e9)]:
    for elo, ehi in [(0, 0.8), (0.8, 100)]:
        m = keep & (Rc >= lo) & (Rc < hi) & (ext >= elo) & (ext < ehi)
        if m.sum() > 5: print('R %5.1f-%5.1f%%, extent %.1f-%.1f: n %4d, median depth %.3f%%' % (lo, min(hi, 99), elo, min(ehi, 9), m.sum(), np.median(d[m])))
