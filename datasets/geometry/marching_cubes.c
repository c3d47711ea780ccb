/* datasets/geometry/marching_cubes.c — marching cubes (Lorensen & Cline 1987) with a consistent
 * triangulation, so the output is watertight, edge- and vertex-manifold and oriented.
 *
 * The 256-case table is not typed in: it is derived once at start-up from one rule per cube
 * face, which is what makes it consistent. On each face of a cell the sign changes of its four
 * edges are joined by segments: two sign changes give one segment; four (the ambiguous face,
 * diagonal corners alike) give two segments that always cut off the two positive (outside)
 * corners — the fixed disambiguation of Montani, Scateni & Scopigno 1994 ("A modified look-up
 * table for implicit disambiguation of Marching Cubes"). A face's segments depend only on its
 * four corner signs, so the two cells that share it draw the same segments and the surface has
 * no cracks. Segments are directed so that, seen from outside the cell, the inside corners lie
 * to their right; every sign-changing cell edge is then the end of exactly one segment and the
 * start of another, the segments close into loops on the cell boundary, and each loop becomes
 * a triangle fan whose normal (right-hand rule) points outward, towards positive values.
 * A fan is started at a loop vertex whose diagonals join no two vertices of one cell face, so
 * a diagonal can never coincide with one drawn by the neighbouring cell (which would put four
 * triangles on an edge). Every mesh edge is therefore either a face segment (one triangle in
 * each of the two cells sharing the face) or a fan diagonal (two triangles in one cell). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "datasets/geometry/geometry.h"
#include "tensor/tensor.h"

#define MAX_TRI 12

/* corner c = x | y << 1 | z << 2; edge e = 4·axis + j, its low corner has bit j&1 on axis
 * (axis+1)%3 and bit j>>1 on axis (axis+2)%3; face = 2·axis + side. */
static int8_t tri_table[256][3 * MAX_TRI + 1];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int edge_c0(int e) {
    int a = e / 4, j = e % 4, b = (a + 1) % 3, c = (a + 2) % 3;
    return ((j & 1) << b) | ((j >> 1) << c);
}
static int edge_c1(int e) { return edge_c0(e) | (1 << (e / 4)); }
static void corner_pos(int c, double p[3]) {
    for (int k = 0; k < 3; k++) p[k] = (c >> k) & 1;
}
static void edge_mid(int e, double p[3]) {
    corner_pos(edge_c0(e), p);
    p[e / 4] += 0.5;
}
static bool edge_on_face(int e, int f) {
    int a = f / 2, s = f % 2;
    return e / 4 != a && ((edge_c0(e) >> a) & 1) == s;
}
static bool edges_share_face(int e0, int e1) {
    for (int f = 0; f < 6; f++)
        if (edge_on_face(e0, f) && edge_on_face(e1, f)) return true;
    return false;
}
static int shared_corner(int e0, int e1) {
    int a[2] = {edge_c0(e0), edge_c1(e0)}, b[2] = {edge_c0(e1), edge_c1(e1)};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (a[i] == b[j]) return a[i];
    return -1;
}

/* a broken derivation rule is a programmer error: the tensor layer's abort path, one line */
_Noreturn static void table_fail(int cs, const char *what) {
    tensor_fail("marching cubes", "table generation failed for case %d: %s", cs, what);
}

static void build_table(void) {
    for (int cs = 0; cs < 256; cs++) {
        int next[12], prev_count[12] = {0};
        bool cut[12];
        for (int e = 0; e < 12; e++) {
            next[e] = -1;
            cut[e] = ((cs >> edge_c0(e)) & 1) != ((cs >> edge_c1(e)) & 1);
        }
        for (int f = 0; f < 6; f++) {
            int a = f / 2, s = f % 2, E[4], ne = 0;
            double nF[3] = {0, 0, 0};
            nF[a] = s ? 1 : -1;
            for (int e = 0; e < 12; e++)
                if (edge_on_face(e, f) && cut[e]) E[ne++] = e;
            int seg[2][2], nseg = 0;
            if (ne == 2) {
                seg[0][0] = E[0], seg[0][1] = E[1], nseg = 1;
            } else if (ne == 4) {
                /* cut off each outside corner of the face by the two edges that meet there */
                for (int c = 0; c < 8; c++) {
                    if (((c >> a) & 1) != s || ((cs >> c) & 1)) continue;
                    int k = 0;
                    for (int i = 0; i < 4; i++)
                        if (edge_c0(E[i]) == c || edge_c1(E[i]) == c) seg[nseg][k++] = E[i];
                    if (k != 2) table_fail(cs, "ambiguous face");
                    nseg++;
                }
            } else if (ne != 0) {
                table_fail(cs, "odd number of sign changes on a face");
            }
            for (int i = 0; i < nseg; i++) {
                int P = seg[i][0], Q = seg[i][1];
                double p[3], q[3], d[3], m[3], ref[3] = {0, 0, 0};
                edge_mid(P, p), edge_mid(Q, q);
                for (int k = 0; k < 3; k++) d[k] = q[k] - p[k], m[k] = 0.5 * (p[k] + q[k]);
                /* a point on the inside of the segment: the cut-off corner if it is inside, the
                 * mirror of it if it is outside; the inside corners' centroid when the segment
                 * splits the face in halves */
                int k0 = shared_corner(P, Q);
                double sgn = 1;
                if (k0 >= 0) {
                    corner_pos(k0, ref);
                    if (!((cs >> k0) & 1)) sgn = -1;
                } else {
                    int cnt = 0;
                    for (int c = 0; c < 8; c++)
                        if (((c >> a) & 1) == s && ((cs >> c) & 1)) {
                            double cp[3];
                            corner_pos(c, cp);
                            for (int k = 0; k < 3; k++) ref[k] += cp[k];
                            cnt++;
                        }
                    for (int k = 0; k < 3; k++) ref[k] /= cnt;
                }
                double dn[3] = {d[1] * nF[2] - d[2] * nF[1], d[2] * nF[0] - d[0] * nF[2], d[0] * nF[1] - d[1] * nF[0]};
                double side = sgn * (dn[0] * (ref[0] - m[0]) + dn[1] * (ref[1] - m[1]) + dn[2] * (ref[2] - m[2]));
                if (side == 0) table_fail(cs, "degenerate segment orientation");
                if (side < 0) {
                    int t = P;
                    P = Q, Q = t;
                }
                if (next[P] >= 0) table_fail(cs, "an edge starts two segments");
                next[P] = Q;
                prev_count[Q]++;
            }
        }
        int nt = 0;
        bool seen[12] = {false};
        for (int e = 0; e < 12; e++) {
            if (cut[e] && (next[e] < 0 || prev_count[e] != 1)) table_fail(cs, "segments do not close into loops");
            if (!cut[e] || seen[e]) continue;
            int loop[12], n = 0;
            for (int x = e; !seen[x]; x = next[x]) seen[x] = true, loop[n++] = x;
            if (n < 3) table_fail(cs, "loop shorter than a triangle");
            int start = -1;
            for (int s0 = 0; s0 < n && start < 0; s0++) {
                bool ok = true;
                for (int j = 2; j <= n - 2 && ok; j++)
                    if (edges_share_face(loop[s0], loop[(s0 + j) % n])) ok = false;
                if (ok) start = s0;
            }
            if (start < 0) table_fail(cs, "no fan start avoids same-face diagonals");
            for (int j = 1; j + 1 < n; j++) {
                if (nt >= MAX_TRI) table_fail(cs, "too many triangles");
                tri_table[cs][3 * nt] = (int8_t)loop[start];
                tri_table[cs][3 * nt + 1] = (int8_t)loop[(start + j) % n];
                tri_table[cs][3 * nt + 2] = (int8_t)loop[(start + j + 1) % n];
                nt++;
            }
        }
        tri_table[cs][3 * nt] = -1;
    }
}

/* the case of cell (x fastest) of an nx × ny × … grid with strides s: bit c set where corner c
 * (x offset bit 0, y bit 1, z bit 2) is inside (f < 0); *p = the index of its corner 0 */
static int cell_case(const float *f, int nx, int ny, const int64_t s[3], int64_t cell, int64_t *p) {
    int64_t x = cell % (nx - 1), y = cell / (nx - 1) % (ny - 1), z = cell / ((int64_t)(nx - 1) * (ny - 1));
    *p = x + y * s[1] + z * s[2];
    int cs = 0;
    for (int c = 0; c < 8; c++)
        if (f[*p + (c & 1) * s[0] + ((c >> 1) & 1) * s[1] + ((c >> 2) & 1) * s[2]] < 0) cs |= 1 << c;
    return cs;
}

int ds_marching_cubes(const float *f, int nx, int ny, int nz, const float origin[3], float h, DsMesh *out) {
    pthread_once(&table_once, build_table);
    memset(out, 0, sizeof *out);
    if (nx < 2 || ny < 2 || nz < 2) return 0;
    int64_t sx = 1, sy = nx, sz = (int64_t)nx * ny, np = sz * nz;
    int dims[3] = {nx, ny, nz};
    int64_t stride[3] = {sx, sy, sz};
    int32_t *eid = malloc(sizeof(int32_t) * 3 * (size_t)np);
    if (!eid) return -1;
    /* one vertex per sign-changing grid edge; inside is f < 0, f = 0 counts as outside */
    int64_t nv = 0;
    for (int64_t p = 0; p < np; p++) {
        int64_t c[3] = {p % nx, p / nx % ny, p / sz};
        for (int a = 0; a < 3; a++) {
            eid[3 * p + a] = -1;
            if (c[a] + 1 >= dims[a]) continue;
            if ((f[p] < 0) != (f[p + stride[a]] < 0)) eid[3 * p + a] = (int32_t)nv++;
        }
    }
    if (nv > INT32_MAX / 2) {
        free(eid);
        return -1;
    }
    out->v = malloc(sizeof(float) * 3 * (size_t)(nv + 1));
    out->n = malloc(sizeof(float) * 3 * (size_t)(nv + 1));
    if (!out->v || !out->n) goto oom;
    out->nv = nv;
    int par_nt = base_par_threads(np, 20);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t p = 0; p < np; p++) {
        int64_t c[3] = {p % nx, p / nx % ny, p / sz};
        for (int a = 0; a < 3; a++) {
            int32_t id = eid[3 * p + a];
            if (id < 0) continue;
            int64_t q = p + stride[a];
            double t = (double)f[p] / ((double)f[p] - (double)f[q]);
            /* keep vertices off the grid points so no triangle collapses to a point */
            t = fmin(fmax(t, 1e-3), 1 - 1e-3);
            double g[2][3];
            for (int e = 0; e < 2; e++) {
                int64_t pp = e ? q : p;
                int64_t cc[3] = {c[0], c[1], c[2]};
                cc[a] += e;
                for (int k = 0; k < 3; k++) {
                    int64_t lo = cc[k] > 0 ? pp - stride[k] : pp, hi = cc[k] + 1 < dims[k] ? pp + stride[k] : pp;
                    double span = (double)((cc[k] + 1 < dims[k]) + (cc[k] > 0)) * h;
                    g[e][k] = span > 0 ? ((double)f[hi] - (double)f[lo]) / span : 0;
                }
            }
            double nn[3], l = 0;
            for (int k = 0; k < 3; k++) {
                out->v[3 * (int64_t)id + k] = (float)(origin[k] + h * ((double)c[k] + (k == a ? t : 0)));
                nn[k] = (1 - t) * g[0][k] + t * g[1][k];
                l += nn[k] * nn[k];
            }
            l = l > 0 ? 1 / sqrt(l) : 0;
            for (int k = 0; k < 3; k++) out->n[3 * (int64_t)id + k] = (float)(nn[k] * l);
        }
    }
    /* triangles: count, then fill */
    int64_t nf = 0;
    int64_t ncell = (int64_t)(nx - 1) * (ny - 1) * (nz - 1);
    for (int64_t cell = 0; cell < ncell; cell++) {
        int64_t p;
        int cs = cell_case(f, nx, ny, stride, cell, &p);
        for (const int8_t *t = tri_table[cs]; *t >= 0; t += 3) nf++;
    }
    out->f = malloc(sizeof(int32_t) * 3 * (size_t)(nf + 1));
    if (!out->f) goto oom;
    int64_t k = 0;
    for (int64_t cell = 0; cell < ncell; cell++) {
        int64_t p;
        int cs = cell_case(f, nx, ny, stride, cell, &p);
        for (const int8_t *t = tri_table[cs]; *t >= 0; t++) {
            int e = *t, c0 = edge_c0(e);
            int64_t q = p + (c0 & 1) * sx + ((c0 >> 1) & 1) * sy + ((c0 >> 2) & 1) * sz;
            out->f[k++] = eid[3 * q + e / 4];
        }
    }
    out->nf = nf;
    free(eid);
    return 0;
oom:
    free(eid);
    ds_mesh_free(out);
    return -1;
}
