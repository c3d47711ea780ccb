/* datasets/geometry/geom_mesh.c — mesh topology (edges, manifoldness, orientation, Euler characteristic)
 * and measures (bounding box, area, divergence-theorem volume), normalization transforms. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/geometry/geometry.h"

typedef struct {
    uint64_t key;  /* min << 32 | max */
    int32_t face;
    int32_t fwd;   /* 1 when the face runs min → max */
} HalfEdge;

static int cmp_half(const void *a, const void *b) {
    const HalfEdge *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->face > y->face) - (x->face < y->face);
}

static bool face_ok(const DsMesh *m, int64_t f) {
    const int32_t *t = m->f + 3 * f;
    for (int k = 0; k < 3; k++)
        if (t[k] < 0 || t[k] >= m->nv) return false;
    return t[0] != t[1] && t[1] != t[2] && t[0] != t[2];
}

int64_t ds_mesh_edges(const DsMesh *m, DsEdge **out) {
    *out = NULL;
    HalfEdge *h = malloc(sizeof(HalfEdge) * (size_t)(3 * m->nf + 1));
    if (!h) return -1;
    int64_t nh = 0;
    for (int64_t f = 0; f < m->nf; f++) {
        if (!face_ok(m, f)) continue;
        const int32_t *t = m->f + 3 * f;
        for (int k = 0; k < 3; k++) {
            uint32_t a = (uint32_t)t[k], b = (uint32_t)t[(k + 1) % 3];
            uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
            h[nh++] = (HalfEdge){((uint64_t)lo << 32) | hi, (int32_t)f, a < b};
        }
    }
    qsort(h, (size_t)nh, sizeof(HalfEdge), cmp_half);
    DsEdge *e = malloc(sizeof(DsEdge) * (size_t)(nh + 1));
    if (!e) {
        free(h);
        return -1;
    }
    int64_t ne = 0;
    for (int64_t i = 0; i < nh;) {
        int64_t j = i;
        while (j < nh && h[j].key == h[i].key) j++;
        DsEdge *d = &e[ne++];
        d->a = (int32_t)(h[i].key >> 32);
        d->b = (int32_t)(h[i].key & 0xffffffffu);
        d->nf = (int32_t)(j - i);
        d->f0 = h[i].face;
        d->f1 = j - i > 1 ? h[i + 1].face : -1;
        d->oriented = j - i == 2 && h[i].fwd != h[i + 1].fwd;
        i = j;
    }
    free(h);
    *out = e;
    return ne;
}

static int64_t uf_find(int64_t *p, int64_t x) {
    while (p[x] != x) {
        p[x] = p[p[x]];
        x = p[x];
    }
    return x;
}

static void uf_union(int64_t *p, int64_t a, int64_t b) {
    a = uf_find(p, a), b = uf_find(p, b);
    if (a != b) p[a < b ? b : a] = a < b ? a : b;
}

static int corner_of(const DsMesh *m, int32_t f, int32_t v) {
    const int32_t *t = m->f + 3 * (int64_t)f;
    return t[0] == v ? 0 : t[1] == v ? 1 : 2;
}

void ds_mesh_bbox(const DsMesh *m, float lo[3], float hi[3]) {
    for (int k = 0; k < 3; k++) lo[k] = INFINITY, hi[k] = -INFINITY;
    for (int64_t i = 0; i < m->nv; i++)
        for (int k = 0; k < 3; k++) {
            float x = m->v[3 * i + k];
            if (x < lo[k]) lo[k] = x;
            if (x > hi[k]) hi[k] = x;
        }
    if (m->nv == 0)
        for (int k = 0; k < 3; k++) lo[k] = hi[k] = 0;
}

static void face_cross(const DsMesh *m, int64_t f, double c[3]) {
    const float *a = m->v + 3 * (int64_t)m->f[3 * f], *b = m->v + 3 * (int64_t)m->f[3 * f + 1],
                *d = m->v + 3 * (int64_t)m->f[3 * f + 2];
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, w[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
    c[0] = u[1] * w[2] - u[2] * w[1];
    c[1] = u[2] * w[0] - u[0] * w[2];
    c[2] = u[0] * w[1] - u[1] * w[0];
}

double ds_mesh_area(const DsMesh *m) {
    double s = 0;
    for (int64_t f = 0; f < m->nf; f++) {
        if (!face_ok(m, f)) continue;
        double c[3];
        face_cross(m, f, c);
        s += 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    }
    return s;
}

double ds_mesh_signed_volume(const DsMesh *m) {
    /* Σ det[v0 v1 v2] / 6; relative to the bbox center so large offsets do not cancel badly */
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    double o[3] = {0.5 * ((double)lo[0] + hi[0]), 0.5 * ((double)lo[1] + hi[1]), 0.5 * ((double)lo[2] + hi[2])};
    double s = 0;
    for (int64_t f = 0; f < m->nf; f++) {
        if (!face_ok(m, f)) continue;
        double p[3][3];
        for (int k = 0; k < 3; k++)
            for (int d = 0; d < 3; d++) p[k][d] = m->v[3 * (int64_t)m->f[3 * f + k] + d] - o[d];
        s += p[0][0] * (p[1][1] * p[2][2] - p[1][2] * p[2][1]) - p[0][1] * (p[1][0] * p[2][2] - p[1][2] * p[2][0]) +
             p[0][2] * (p[1][0] * p[2][1] - p[1][1] * p[2][0]);
    }
    return s / 6.0;
}

int ds_mesh_compute_normals(DsMesh *m) {
    if (!m->n) {
        m->n = malloc(sizeof(float) * (size_t)(3 * m->nv + 1));
        if (!m->n) return -1;
    }
    double *acc = calloc((size_t)(3 * m->nv + 1), sizeof(double));
    if (!acc) return -1;
    for (int64_t f = 0; f < m->nf; f++) {
        if (!face_ok(m, f)) continue;
        double c[3];
        face_cross(m, f, c); /* |c| = 2·area: area weighting */
        for (int k = 0; k < 3; k++)
            for (int d = 0; d < 3; d++) acc[3 * (int64_t)m->f[3 * f + k] + d] += c[d];
    }
    for (int64_t i = 0; i < m->nv; i++) {
        double l = sqrt(acc[3 * i] * acc[3 * i] + acc[3 * i + 1] * acc[3 * i + 1] + acc[3 * i + 2] * acc[3 * i + 2]);
        for (int d = 0; d < 3; d++) m->n[3 * i + d] = l > 0 ? (float)(acc[3 * i + d] / l) : 0.0f;
    }
    free(acc);
    return 0;
}

static void *dup_array(const void *p, size_t size) {
    if (!p) return NULL;
    void *q = malloc(size ? size : 1);
    if (q) memcpy(q, p, size);
    return q;
}

int ds_mesh_copy(const DsMesh *src, DsMesh *dst) {
    DsMesh d = {.nv = src->nv, .nf = src->nf};
    size_t v3 = sizeof(float) * (size_t)(3 * src->nv);
    d.v = dup_array(src->v, v3);
    d.n = dup_array(src->n, v3);
    d.color = dup_array(src->color, v3);
    d.scalar = dup_array(src->scalar, sizeof(float) * (size_t)src->nv);
    d.f = dup_array(src->f, sizeof(int32_t) * (size_t)(3 * src->nf));
    if ((src->v && !d.v) || (src->n && !d.n) || (src->color && !d.color) || (src->scalar && !d.scalar) ||
        (src->f && !d.f)) {
        free(d.v), free(d.n), free(d.color), free(d.scalar), free(d.f);
        return -1;
    }
    *dst = d;
    return 0;
}

int ds_mesh_check(const DsMesh *m, DsMeshCheck *out) {
    memset(out, 0, sizeof *out);
    ds_mesh_bbox(m, out->lo, out->hi);
    DsEdge *e;
    int64_t ne = ds_mesh_edges(m, &e);
    if (ne < 0) return -1;
    int64_t *corner = malloc(sizeof(int64_t) * (size_t)(3 * m->nf + 1));
    int64_t *vp = malloc(sizeof(int64_t) * (size_t)(m->nv + 1));
    int64_t *fan = malloc(sizeof(int64_t) * (size_t)(m->nv + 1));
    if (!corner || !vp || !fan) {
        free(e), free(corner), free(vp), free(fan);
        return -1;
    }
    for (int64_t i = 0; i < 3 * m->nf; i++) corner[i] = i;
    for (int64_t i = 0; i < m->nv; i++) vp[i] = i, fan[i] = -1;
    out->nedges = ne;
    for (int64_t i = 0; i < ne; i++) {
        const DsEdge *d = &e[i];
        if (d->nf == 1) out->boundary_edges++;
        else if (d->nf > 2) out->nonmanifold_edges++;
        else if (!d->oriented) out->misoriented_edges++;
        uf_union(vp, d->a, d->b);
        /* the corners at a (and at b) of the two faces of a manifold edge belong to one fan */
        if (d->nf == 2) {
            uf_union(corner, 3 * (int64_t)d->f0 + corner_of(m, d->f0, d->a), 3 * (int64_t)d->f1 + corner_of(m, d->f1, d->a));
            uf_union(corner, 3 * (int64_t)d->f0 + corner_of(m, d->f0, d->b), 3 * (int64_t)d->f1 + corner_of(m, d->f1, d->b));
        }
    }
    char *used = calloc((size_t)(m->nv + 1), 1), *bad = calloc((size_t)(m->nv + 1), 1);
    if (!used || !bad) {
        free(e), free(corner), free(vp), free(fan), free(used), free(bad);
        return -1;
    }
    for (int64_t f = 0; f < m->nf; f++) {
        if (!face_ok(m, f)) {
            out->degenerate_faces++;
            continue;
        }
        for (int k = 0; k < 3; k++) {
            int32_t v = m->f[3 * f + k];
            used[v] = 1;
            int64_t r = uf_find(corner, 3 * f + k);
            if (fan[v] < 0) fan[v] = r;
            else if (fan[v] != r) bad[v] = 1;
        }
    }
    int64_t nfaces = m->nf - out->degenerate_faces;
    for (int64_t i = 0; i < m->nv; i++) {
        if (!used[i]) continue;
        out->nv_used++;
        out->nonmanifold_vertices += bad[i];
        if (uf_find(vp, i) == i) out->components++;
    }
    out->euler = out->nv_used - ne + nfaces;
    out->watertight = ne > 0 && out->boundary_edges == 0 && out->nonmanifold_edges == 0;
    out->edge_manifold = out->nonmanifold_edges == 0;
    out->manifold = out->edge_manifold && out->nonmanifold_vertices == 0;
    out->oriented = out->misoriented_edges == 0;
    out->genus = out->watertight && out->manifold && out->oriented && out->degenerate_faces == 0
                     ? (2 * out->components - out->euler) / 2
                     : -1;
    out->area = ds_mesh_area(m);
    out->volume = ds_mesh_signed_volume(m);
    free(e), free(corner), free(vp), free(fan), free(used), free(bad);
    return 0;
}

void ds_mesh_flip(DsMesh *m) {
    for (int64_t f = 0; f < m->nf; f++) {
        int32_t t = m->f[3 * f + 1];
        m->f[3 * f + 1] = m->f[3 * f + 2], m->f[3 * f + 2] = t;
    }
    if (m->n)
        for (int64_t v = 0; v < 3 * m->nv; v++) m->n[v] = -m->n[v];
}

DsTransform ds_mesh_normalizing_transform(const DsMesh *m, float margin) {
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    DsTransform t;
    float ext = 0;
    for (int k = 0; k < 3; k++) {
        t.center[k] = 0.5f * (lo[k] + hi[k]);
        if (hi[k] - lo[k] > ext) ext = hi[k] - lo[k];
    }
    t.scale = ext > 0 ? 2.0f * (1.0f - margin) / ext : 1.0f;
    return t;
}

void ds_points_apply_transform(float *p, int64_t n, DsTransform t) {
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) p[3 * i + k] = (p[3 * i + k] - t.center[k]) * t.scale;
}

void ds_points_apply_inverse(float *p, int64_t n, DsTransform t) {
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) p[3 * i + k] = p[3 * i + k] / t.scale + t.center[k];
}

void ds_mesh_apply_transform(DsMesh *m, DsTransform t) { ds_points_apply_transform(m->v, m->nv, t); }

void ds_mesh_rigid(DsMesh *m, const float R[9], const float t[3]) {
    for (int64_t i = 0; i < m->nv; i++) {
        float *p = m->v + 3 * i, q[3];
        for (int r = 0; r < 3; r++) q[r] = R[3 * r] * p[0] + R[3 * r + 1] * p[1] + R[3 * r + 2] * p[2] + t[r];
        memcpy(p, q, sizeof q);
        if (m->n) {
            float *n = m->n + 3 * i;
            for (int r = 0; r < 3; r++) q[r] = R[3 * r] * n[0] + R[3 * r + 1] * n[1] + R[3 * r + 2] * n[2];
            memcpy(n, q, sizeof q);
        }
    }
}
