/* models/gs4d/nodes.c — sparse control nodes: sampling, the Gaussian → node kNN, and the blend
 * (formulas in nodes.h). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "nodes.h"

static double dist2(const float *a, const float *b) {
    double dx = (double)a[0] - b[0], dy = (double)a[1] - b[1], dz = (double)a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

void gs4d_fps(const float *x, int64_t n, int64_t m, int64_t first, int64_t *out) {
    if (m <= 0 || n <= 0) return;
    double *d = base_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = DBL_MAX;
    int64_t cur = first < 0 || first >= n ? 0 : first;
    for (int64_t j = 0; j < m; j++) {
        out[j] = cur;
        int64_t best = 0;
        double bd = -1;
        for (int64_t i = 0; i < n; i++) {
            double e = dist2(x + 3 * i, x + 3 * cur);
            if (e < d[i]) d[i] = e;
            if (d[i] > bd) bd = d[i], best = i;
        }
        cur = best;
    }
    free(d);
}

void gs4d_knn_to(const float *ref, int64_t nr, const float *q, int64_t nq, int k, int32_t *idx) {
#pragma omp parallel for schedule(static) if (nq * nr > 200000)
    for (int64_t i = 0; i < nq; i++) {
        double bd[64];
        int32_t *bi = idx + i * k;
        int got = 0;
        for (int64_t j = 0; j < nr; j++) {
            double e = dist2(q + 3 * i, ref + 3 * j);
            if (got == k && e >= bd[k - 1]) continue; /* ties keep the smaller index */
            int s = got < k ? got++ : k - 1;
            while (s > 0 && bd[s - 1] > e) bd[s] = bd[s - 1], bi[s] = bi[s - 1], s--;
            bd[s] = e, bi[s] = (int32_t)j;
        }
    }
}

static Tensor *col(Tensor *q, int c) { return tensor_narrow(q, 1, c, 1); }

Tensor *gs4d_quat_to_rotmat(Tensor *q) {
    int64_t m = q->shape[0];
    Tensor *u = tensor_div(q, tensor_norm(q, 2, 1, (int[]){1}, true));
    Tensor *w = col(u, 0), *x = col(u, 1), *y = col(u, 2), *z = col(u, 3);
    Tensor *xx = tensor_mul(x, x), *yy = tensor_mul(y, y), *zz = tensor_mul(z, z);
    Tensor *xy = tensor_mul(x, y), *xz = tensor_mul(x, z), *yz = tensor_mul(y, z);
    Tensor *wx = tensor_mul(w, x), *wy = tensor_mul(w, y), *wz = tensor_mul(w, z);
    Tensor *e[9] = {
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(yy, zz), 2), 1), tensor_mul_scalar(tensor_sub(xy, wz), 2),
        tensor_mul_scalar(tensor_add(xz, wy), 2),
        tensor_mul_scalar(tensor_add(xy, wz), 2), tensor_rsub_scalar(tensor_mul_scalar(tensor_add(xx, zz), 2), 1),
        tensor_mul_scalar(tensor_sub(yz, wx), 2),
        tensor_mul_scalar(tensor_sub(xz, wy), 2), tensor_mul_scalar(tensor_add(yz, wx), 2),
        tensor_rsub_scalar(tensor_mul_scalar(tensor_add(xx, yy), 2), 1),
    };
    return tensor_reshape(tensor_cat(9, e, 1), 3, (int64_t[]){m, 3, 3});
}

Tensor *gs4d_quat_mul(Tensor *a, Tensor *b) {
    Tensor *aw = col(a, 0), *ax = col(a, 1), *ay = col(a, 2), *az = col(a, 3);
    Tensor *bw = col(b, 0), *bx = col(b, 1), *by = col(b, 2), *bz = col(b, 3);
#define M2(p, q) tensor_mul(p, q)
    Tensor *e[4] = {
        tensor_sub(tensor_sub(M2(aw, bw), M2(ax, bx)), tensor_add(M2(ay, by), M2(az, bz))),
        tensor_add(tensor_add(M2(aw, bx), M2(ax, bw)), tensor_sub(M2(ay, bz), M2(az, by))),
        tensor_add(tensor_sub(M2(aw, by), M2(ax, bz)), tensor_add(M2(ay, bw), M2(az, bx))),
        tensor_add(tensor_add(M2(aw, bz), M2(ax, by)), tensor_sub(M2(az, bw), M2(ay, bx))),
    };
#undef M2
    return tensor_cat(4, e, 1);
}

/* v's rows at idx as (N, K, D) */
static Tensor *gathered(Tensor *v, Tensor *idx, int k) {
    int64_t n = idx->shape[0] / k;
    int64_t shape[TENSOR_MAX_DIMS] = {n, k};
    for (int a = 1; a < v->ndim; a++) shape[a + 1] = v->shape[a];
    return tensor_reshape(tensor_index_select(v, 0, idx), v->ndim + 1, shape);
}

Tensor *gs4d_rbf_weights(Tensor *x, Tensor *p, Tensor *rho, Tensor *idx, int k) {
    Tensor *d = tensor_sub(tensor_unsqueeze(x, 1), gathered(p, idx, k));     /* (N, K, 3) */
    Tensor *d2 = tensor_sum(tensor_mul(d, d), 1, (int[]){2}, false);         /* (N, K) */
    Tensor *inv = tensor_exp(tensor_mul_scalar(tensor_squeeze(gathered(rho, idx, k), 2), -2)); /* 1 / r² */
    return tensor_softmax(tensor_mul_scalar(tensor_mul(d2, inv), -0.5), 1);
}

Tensor *gs4d_node_blend(Tensor *w, Tensor *v, Tensor *idx, int k) {
    return tensor_sum(tensor_mul(gathered(v, idx, k), tensor_unsqueeze(w, 2)), 1, (int[]){1}, false);
}

Tensor *gs4d_node_lbs(Tensor *x, Tensor *p, Tensor *R, Tensor *T, Tensor *w, Tensor *idx, int k) {
    Tensor *pk = gathered(p, idx, k);                                   /* (N, K, 3) */
    Tensor *local = tensor_sub(tensor_unsqueeze(x, 1), pk);             /* (N, K, 3) */
    Tensor *Rk = gathered(R, idx, k);                                   /* (N, K, 3, 3) */
    Tensor *rot = tensor_sum(tensor_mul(Rk, tensor_unsqueeze(local, 2)), 1, (int[]){3}, false); /* (N, K, 3) */
    Tensor *y = tensor_add(tensor_add(rot, pk), gathered(T, idx, k));
    return tensor_sum(tensor_mul(y, tensor_unsqueeze(w, 2)), 1, (int[]){1}, false);
}
