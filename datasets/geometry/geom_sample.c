/* datasets/geometry/geom_sample.c — area-weighted surface samples and sharp-edge samples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "datasets/geometry/geometry.h"
#include "tensor/tensor.h"

#define STREAM_SURFACE 0x53555246ull /* "SURF" */
#define STREAM_SHARP 0x53485250ull   /* "SHRP" */

/* 53 random bits in [0, 1) from two words; (x + ½)/2³² in (0, 1) from one. */
static double u53(uint32_t a, uint32_t b) { return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) / 9007199254740992.0; }
static double u32o(uint32_t a) { return ((double)a + 0.5) / 4294967296.0; }

/* index of the first cdf entry > x (cdf increasing, cdf[n-1] = total) */
static int64_t upper_bound(const double *cdf, int64_t n, double x) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

int ds_sample_surface(const DsMesh *m, int64_t n, uint64_t seed, float *pts, float *nrm, int32_t *face) {
    if (m->nf <= 0) return -1;
    double *cdf = malloc(sizeof(double) * (size_t)m->nf);
    if (!cdf) return -1;
    double total = 0;
    for (int64_t f = 0; f < m->nf; f++) {
        const float *a = m->v + 3 * (int64_t)m->f[3 * f], *b = m->v + 3 * (int64_t)m->f[3 * f + 1],
                    *c = m->v + 3 * (int64_t)m->f[3 * f + 2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double x = u[1] * w[2] - u[2] * w[1], y = u[2] * w[0] - u[0] * w[2], z = u[0] * w[1] - u[1] * w[0];
        total += 0.5 * sqrt(x * x + y * y + z * z);
        cdf[f] = total;
    }
    if (!(total > 0)) {
        free(cdf);
        return -1;
    }
    int par_nt = base_par_threads(n, 50);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        tensor_philox(seed, STREAM_SURFACE, (uint64_t)i, r);
        int64_t f = upper_bound(cdf, m->nf, u53(r[0], r[1]) * total);
        /* uniform in the triangle: p = (1 − √u₁) a + √u₁ (1 − u₂) b + √u₁ u₂ c */
        double s = sqrt(u32o(r[2])), t = u32o(r[3]);
        double wa = 1 - s, wb = s * (1 - t), wc = s * t;
        const float *a = m->v + 3 * (int64_t)m->f[3 * f], *b = m->v + 3 * (int64_t)m->f[3 * f + 1],
                    *c = m->v + 3 * (int64_t)m->f[3 * f + 2];
        for (int k = 0; k < 3; k++) pts[3 * i + k] = (float)(wa * a[k] + wb * b[k] + wc * c[k]);
        if (nrm) {
            double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
            double x = u[1] * w[2] - u[2] * w[1], y = u[2] * w[0] - u[0] * w[2], z = u[0] * w[1] - u[1] * w[0];
            double l = sqrt(x * x + y * y + z * z);
            l = l > 0 ? 1 / l : 0;
            nrm[3 * i] = (float)(x * l), nrm[3 * i + 1] = (float)(y * l), nrm[3 * i + 2] = (float)(z * l);
        }
        if (face) face[i] = (int32_t)f;
    }
    free(cdf);
    return 0;
}

static void unit_normal(const DsMesh *m, int32_t f, double n[3]) {
    const float *a = m->v + 3 * (int64_t)m->f[3 * (int64_t)f], *b = m->v + 3 * (int64_t)m->f[3 * (int64_t)f + 1],
                *c = m->v + 3 * (int64_t)m->f[3 * (int64_t)f + 2];
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = u[1] * w[2] - u[2] * w[1], n[1] = u[2] * w[0] - u[0] * w[2], n[2] = u[0] * w[1] - u[1] * w[0];
    double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (int k = 0; k < 3; k++) n[k] = l > 0 ? n[k] / l : 0;
}

/* The sharp edges of m: manifold, consistently oriented edges whose face normals differ by more
 * than angle_deg. Returns their count (edges compacted to the front of *out) or -1. */
static int64_t sharp_edges(const DsMesh *m, float angle_deg, DsEdge **out) {
    int64_t ne = ds_mesh_edges(m, out);
    if (ne < 0) return -1;
    double cos_thr = cos(angle_deg * M_PI / 180.0);
    int64_t k = 0;
    for (int64_t i = 0; i < ne; i++) {
        DsEdge e = (*out)[i];
        if (e.nf != 2) continue;
        double n0[3], n1[3];
        unit_normal(m, e.f0, n0);
        unit_normal(m, e.f1, n1);
        double c = n0[0] * n1[0] + n0[1] * n1[1] + n0[2] * n1[2];
        /* a misoriented pair has a flipped normal: compare the unsigned dihedral then */
        if (!e.oriented) c = fabs(c);
        if (c < cos_thr) (*out)[k++] = e;
    }
    return k;
}

static double edge_len(const DsMesh *m, const DsEdge *e) {
    const float *a = m->v + 3 * (int64_t)e->a, *b = m->v + 3 * (int64_t)e->b;
    double d0 = b[0] - a[0], d1 = b[1] - a[1], d2 = b[2] - a[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

double ds_mesh_sharp_edge_length(const DsMesh *m, float angle_deg) {
    DsEdge *e;
    int64_t ns = sharp_edges(m, angle_deg, &e);
    double s = 0;
    for (int64_t i = 0; i < ns; i++) s += edge_len(m, &e[i]);
    free(e);
    return s;
}

int64_t ds_sample_sharp_edges(const DsMesh *m, int64_t n, float angle_deg, uint64_t seed, float *pts, float *nrm) {
    DsEdge *e;
    int64_t ns = sharp_edges(m, angle_deg, &e);
    if (ns <= 0) {
        free(e);
        return 0;
    }
    double *cdf = malloc(sizeof(double) * (size_t)ns);
    if (!cdf) {
        free(e);
        return 0;
    }
    double total = 0;
    for (int64_t i = 0; i < ns; i++) cdf[i] = total += edge_len(m, &e[i]);
    if (!(total > 0)) {
        free(e), free(cdf);
        return 0;
    }
    int par_nt = base_par_threads(n, 50);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t i = 0; i < n; i++) {
        uint32_t r[4];
        tensor_philox(seed, STREAM_SHARP, (uint64_t)i, r);
        const DsEdge *d = &e[upper_bound(cdf, ns, u53(r[0], r[1]) * total)];
        double t = u32o(r[2]);
        const float *a = m->v + 3 * (int64_t)d->a, *b = m->v + 3 * (int64_t)d->b;
        for (int k = 0; k < 3; k++) pts[3 * i + k] = (float)((1 - t) * a[k] + t * b[k]);
        if (nrm) {
            double n0[3], n1[3], s[3], l = 0;
            unit_normal(m, d->f0, n0);
            unit_normal(m, d->f1, n1);
            for (int k = 0; k < 3; k++) s[k] = n0[k] + n1[k], l += s[k] * s[k];
            l = l > 1e-24 ? 1 / sqrt(l) : 0;
            for (int k = 0; k < 3; k++) nrm[3 * i + k] = (float)(s[k] * l);
        }
    }
    free(e), free(cdf);
    return n;
}
