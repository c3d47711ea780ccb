/* datasets/geometry/geom_shapes.c — closed, outward-oriented analytic meshes for tests and demos. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/geometry/geometry.h"

static int alloc_mesh(DsMesh *m, int64_t nv, int64_t nf) {
    memset(m, 0, sizeof *m);
    m->v = malloc(sizeof(float) * (size_t)(3 * nv));
    m->f = malloc(sizeof(int32_t) * (size_t)(3 * nf));
    if (!m->v || !m->f) {
        free(m->v), free(m->f);
        memset(m, 0, sizeof *m);
        return -1;
    }
    m->nv = nv, m->nf = nf;
    return 0;
}

static void tri(DsMesh *m, int64_t *k, int32_t a, int32_t b, int32_t c) {
    m->f[3 * *k] = a, m->f[3 * *k + 1] = b, m->f[3 * *k + 2] = c;
    (*k)++;
}

int ds_mesh_make_uv_sphere(float radius, int nlat, int nlon, DsMesh *out) {
    if (nlat < 2 || nlon < 3) return -1;
    int64_t nv = 2 + (int64_t)(nlat - 1) * nlon, nf = 2 * (int64_t)nlon * (nlat - 1);
    if (alloc_mesh(out, nv, nf)) return -1;
    float *v = out->v;
    v[0] = 0, v[1] = 0, v[2] = radius;
    for (int i = 1; i < nlat; i++)
        for (int j = 0; j < nlon; j++) {
            double th = M_PI * i / nlat, ph = 2 * M_PI * j / nlon;
            float *p = v + 3 * (1 + (int64_t)(i - 1) * nlon + j);
            p[0] = (float)(radius * sin(th) * cos(ph));
            p[1] = (float)(radius * sin(th) * sin(ph));
            p[2] = (float)(radius * cos(th));
        }
    int32_t S = (int32_t)nv - 1;
    v[3 * S] = 0, v[3 * S + 1] = 0, v[3 * S + 2] = -radius;
#define VID(i, j) ((int32_t)(1 + (int64_t)((i) - 1) * nlon + ((j) % nlon)))
    int64_t k = 0;
    for (int j = 0; j < nlon; j++) tri(out, &k, 0, VID(1, j), VID(1, j + 1));
    for (int i = 1; i < nlat - 1; i++)
        for (int j = 0; j < nlon; j++) {
            tri(out, &k, VID(i, j), VID(i + 1, j), VID(i + 1, j + 1));
            tri(out, &k, VID(i, j), VID(i + 1, j + 1), VID(i, j + 1));
        }
    for (int j = 0; j < nlon; j++) tri(out, &k, S, VID(nlat - 1, j + 1), VID(nlat - 1, j));
#undef VID
    return ds_mesh_compute_normals(out);
}

int ds_mesh_make_torus(float R, float r, int nmajor, int nminor, DsMesh *out) {
    if (nmajor < 3 || nminor < 3) return -1;
    if (alloc_mesh(out, (int64_t)nmajor * nminor, 2 * (int64_t)nmajor * nminor)) return -1;
    for (int i = 0; i < nmajor; i++)
        for (int j = 0; j < nminor; j++) {
            double u = 2 * M_PI * i / nmajor, w = 2 * M_PI * j / nminor;
            float *p = out->v + 3 * ((int64_t)i * nminor + j);
            p[0] = (float)((R + r * cos(w)) * cos(u));
            p[1] = (float)((R + r * cos(w)) * sin(u));
            p[2] = (float)(r * sin(w));
        }
#define TID(i, j) ((int32_t)(((i) % nmajor) * nminor + ((j) % nminor)))
    int64_t k = 0;
    for (int i = 0; i < nmajor; i++)
        for (int j = 0; j < nminor; j++) {
            tri(out, &k, TID(i, j), TID(i + 1, j), TID(i + 1, j + 1));
            tri(out, &k, TID(i, j), TID(i + 1, j + 1), TID(i, j + 1));
        }
#undef TID
    return ds_mesh_compute_normals(out);
}

int ds_mesh_make_box(const float half[3], int n, DsMesh *out) {
    if (n < 1) return -1;
    /* vertices are the surface points of an (n+1)³ lattice, shared between faces */
    int64_t L = n + 1, nlat = L * L * L;
    int32_t *id = malloc(sizeof(int32_t) * (size_t)nlat);
    if (!id) return -1;
    int64_t nv = 0;
    for (int64_t i = 0; i < nlat; i++) {
        int64_t x = i % L, y = i / L % L, z = i / (L * L);
        bool surf = x == 0 || x == n || y == 0 || y == n || z == 0 || z == n;
        id[i] = surf ? (int32_t)nv++ : -1;
    }
    if (alloc_mesh(out, nv, 12 * (int64_t)n * n)) {
        free(id);
        return -1;
    }
    for (int64_t i = 0; i < nlat; i++) {
        if (id[i] < 0) continue;
        int64_t c[3] = {i % L, i / L % L, i / (L * L)};
        for (int d = 0; d < 3; d++) out->v[3 * id[i] + d] = half[d] * (2.0f * (float)c[d] / (float)n - 1.0f);
    }
    int64_t k = 0;
    for (int a = 0; a < 3; a++)
        for (int s = 0; s < 2; s++) {
            int b = (a + 1) % 3, c = (a + 2) % 3; /* e_b × e_c = +e_a */
            for (int u = 0; u < n; u++)
                for (int w = 0; w < n; w++) {
                    int32_t q[4];
                    int du[4] = {0, 1, 1, 0}, dw[4] = {0, 0, 1, 1};
                    for (int t = 0; t < 4; t++) {
                        int64_t co[3];
                        co[a] = s ? n : 0, co[b] = u + du[t], co[c] = w + dw[t];
                        q[t] = id[co[0] + L * co[1] + L * L * co[2]];
                    }
                    if (s) {
                        tri(out, &k, q[0], q[1], q[2]);
                        tri(out, &k, q[0], q[2], q[3]);
                    } else {
                        tri(out, &k, q[0], q[2], q[1]);
                        tri(out, &k, q[0], q[3], q[2]);
                    }
                }
        }
    free(id);
    return ds_mesh_compute_normals(out);
}
