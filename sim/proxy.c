/* sim/proxy.c — collision proxies by vertex clustering (see proxy.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/contact.h"
#include "sim/proxy.h"

void sim_proxy_free(SimProxy *p) {
    free(p->vert), free(p->faces);
    memset(p, 0, sizeof *p);
}

typedef struct {
    int64_t key[3];
    int32_t v;
} CellVert;

static int cmp_cell(const void *a, const void *b) {
    const CellVert *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->key[i] != y->key[i]) return x->key[i] < y->key[i] ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

typedef struct {
    int32_t c[3]; /* sorted cluster ids */
    int sign;     /* +1: the face's corners are an even permutation of c, −1 odd */
} Tri;

static int cmp_tri(const void *a, const void *b) {
    const Tri *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x->c[i] != y->c[i]) return x->c[i] < y->c[i] ? -1 : 1;
    return 0;
}

/* edges used by an odd number of the triangles */
static int64_t odd_edges(int64_t nf, const int32_t *faces) {
    int64_t ne;
    int32_t *e, *uses;
    if (sim_mesh_edge_uses(nf, faces, &ne, &e, &uses)) return -1;
    int64_t odd = 0;
    for (int64_t k = 0; k < ne; k++) odd += uses[k] & 1;
    free(e), free(uses);
    return odd;
}

static double deviation(int64_t nv, const double *X, const SimProxy *p) {
    double dev = 0;
    for (int64_t v = 0; v < nv; v++) {
        double best = INFINITY, w[3];
        for (int64_t f = 0; f < p->nf; f++) {
            const int32_t *t = p->faces + 3 * f;
            best = fmin(best, sim_point_triangle(X + 3 * v, X + 3 * p->vert[t[0]], X + 3 * p->vert[t[1]], X + 3 * p->vert[t[2]], w));
        }
        dev = fmax(dev, best);
    }
    return dev;
}

static int keep_mesh(int64_t nv, int64_t nf, const int32_t *faces, SimProxy *p) {
    p->vert = malloc(sizeof(int32_t) * (size_t)(nv + 1)), p->faces = malloc(sizeof(int32_t) * 3 * (size_t)(nf + 1));
    if (!p->vert || !p->faces) return -1;
    for (int64_t v = 0; v < nv; v++) p->vert[v] = (int32_t)v;
    memcpy(p->faces, faces, sizeof(int32_t) * 3 * (size_t)nf);
    p->np = nv, p->nf = nf;
    return 0;
}

int sim_proxy_build(int64_t nv, const double *X, int64_t nf, const int32_t *faces, double h, SimProxy *p) {
    memset(p, 0, sizeof *p);
    p->cell = h;
    CellVert *cv = malloc(sizeof *cv * (size_t)(nv + 1));
    int32_t *cl = malloc(sizeof(int32_t) * (size_t)(nv + 1)), *rep = malloc(sizeof(int32_t) * (size_t)(nv + 1));
    int32_t *newid = malloc(sizeof(int32_t) * (size_t)(nv + 1));
    Tri *tri = malloc(sizeof *tri * (size_t)(nf + 1));
    if (!cv || !cl || !rep || !newid || !tri) goto oom;
    double lo[3] = {INFINITY, INFINITY, INFINITY};
    for (int64_t v = 0; v < nv; v++)
        for (int i = 0; i < 3; i++) lo[i] = fmin(lo[i], X[3 * v + i]);
    for (int64_t v = 0; v < nv; v++) {
        for (int i = 0; i < 3; i++) cv[v].key[i] = (int64_t)floor((X[3 * v + i] - lo[i]) / h);
        cv[v].v = (int32_t)v;
    }
    qsort(cv, (size_t)nv, sizeof *cv, cmp_cell);
    /* clusters: runs of one cell; representative: the member nearest the members' mean */
    int64_t nc = 0;
    for (int64_t k = 0; k < nv;) {
        int64_t r = k + 1;
        while (r < nv && !memcmp(cv[r].key, cv[k].key, sizeof cv[k].key)) r++;
        double m[3] = {0, 0, 0}, best = INFINITY;
        for (int64_t u = k; u < r; u++)
            for (int i = 0; i < 3; i++) m[i] += X[3 * cv[u].v + i] / (double)(r - k);
        for (int64_t u = k; u < r; u++) {
            const double *x = X + 3 * cv[u].v;
            double d = (x[0] - m[0]) * (x[0] - m[0]) + (x[1] - m[1]) * (x[1] - m[1]) + (x[2] - m[2]) * (x[2] - m[2]);
            if (d < best) best = d, rep[nc] = cv[u].v;
            cl[cv[u].v] = (int32_t)nc;
        }
        nc++;
        k = r;
    }
    /* the faces mapped to clusters, with orientation; collapsed ones dropped */
    int64_t nt = 0;
    for (int64_t f = 0; f < nf; f++) {
        int32_t c[3] = {cl[faces[3 * f]], cl[faces[3 * f + 1]], cl[faces[3 * f + 2]]};
        if (c[0] == c[1] || c[1] == c[2] || c[0] == c[2]) continue;
        /* sort with the parity of the permutation */
        int sign = 1;
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2 - a; b++)
                if (c[b] > c[b + 1]) {
                    int32_t t = c[b];
                    c[b] = c[b + 1], c[b + 1] = t, sign = -sign;
                }
        tri[nt].c[0] = c[0], tri[nt].c[1] = c[1], tri[nt].c[2] = c[2], tri[nt].sign = sign;
        nt++;
    }
    qsort(tri, (size_t)nt, sizeof *tri, cmp_tri);
    /* identical triangles summed with their orientations, kept where the count is odd: the image
     * of a closed surface is closed mod 2 (two copies, facing or not, are a sheet of no
     * thickness, dropped) */
    int64_t nk = 0;
    for (int64_t k = 0; k < nt;) {
        int64_t r = k + 1;
        int s = tri[k].sign;
        while (r < nt && !cmp_tri(tri + r, tri + k)) s += tri[r].sign, r++;
        if (s & 1) tri[nk] = tri[k], tri[nk].sign = s > 0 ? 1 : -1, nk++;
        k = r;
    }
    if (nk < 4) {
        free(cv), free(cl), free(rep), free(newid), free(tri);
        if (keep_mesh(nv, nf, faces, p)) goto oom2;
        p->boundary = odd_edges(p->nf, p->faces);
        p->deviation = 0;
        return p->boundary < 0 ? -1 : 0;
    }
    /* the clusters some triangle uses become the proxy's vertices */
    for (int64_t c = 0; c < nc; c++) newid[c] = -1;
    p->vert = malloc(sizeof(int32_t) * (size_t)(nc + 1)), p->faces = malloc(sizeof(int32_t) * 3 * (size_t)(nk + 1));
    if (!p->vert || !p->faces) goto oom;
    for (int64_t k = 0; k < nk; k++) {
        int32_t o[3] = {tri[k].c[0], tri[k].c[1], tri[k].c[2]};
        if (tri[k].sign < 0) o[1] = tri[k].c[2], o[2] = tri[k].c[1];
        for (int j = 0; j < 3; j++) {
            if (newid[o[j]] < 0) newid[o[j]] = (int32_t)p->np, p->vert[p->np++] = rep[o[j]];
            p->faces[3 * k + j] = newid[o[j]];
        }
    }
    p->nf = nk;
    free(cv), free(cl), free(rep), free(newid), free(tri);
    p->boundary = odd_edges(p->nf, p->faces);
    if (p->boundary < 0) goto oom2;
    p->deviation = deviation(nv, X, p);
    return 0;
oom:
    free(cv), free(cl), free(rep), free(newid), free(tri);
oom2:
    sim_proxy_free(p);
    return -1;
}
