/* models/skelebones/rigging.c — skeleton, joints, tree, parts and IK after SSDR (rigging.h). */
#include "models/skelebones/rigging.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "datasets/geometry/geometry.h"
#include "datasets/render/gif.h"
#include "datasets/render/video.h"
#include "datasets/render/raster.h"

void sb_rig_options_defaults(SbRigOptions *o) {
    sb_skel_defaults(&o->skel);
    sb_joint_defaults(&o->joints);
    sb_ik_defaults(&o->ik);
    o->ik.steps = 100;
    o->ik_points = 400;
    o->grid = 64;
    o->fill_votes = 5;
    o->bridge = 3;
    o->density_norm = 1;
    o->run_ik = 1;
}

void sb_rig_result_free(SbRigResult *g) {
    ds_mesh_free(&g->shape);
    sb_skeleton_free(&g->skel);
    sb_rig_free(&g->rig);
    free(g->point_node);
    g->point_node = NULL;
}

static double d2(const float *a, const float *b) {
    double x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];
    return x * x + y * y + z * z;
}

/* index of the nearest of b (nb × 3) to each of a (na × 3), brute force (the meshes here have a
 * few thousand vertices) */
static void nearest_all(const float *a, int64_t na, const float *b, int64_t nb, int32_t *out) {
#pragma omp parallel for
    for (int64_t i = 0; i < na; i++) {
        double best = INFINITY;
        int32_t k = 0;
        for (int64_t j = 0; j < nb; j++) {
            double d = d2(a + 3 * i, b + 3 * j);
            if (d < best) best = d, k = (int32_t)j;
        }
        out[i] = k;
    }
}

static double mean_nearest(const float *a, int64_t na, const float *b, int64_t nb) {
    double sum = 0;
    for (int64_t i = 0; i < na; i++) {
        double best = INFINITY;
        for (int64_t j = 0; j < nb; j++) best = fmin(best, d2(a + 3 * i, b + 3 * j));
        sum += sqrt(best);
    }
    return na ? sum / (double)na : 0;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The true rig's joints (at most 2 × true_bones points into X): each bone's head, then, when the
 * source has rest tails and parents, each leaf bone's tail (the limbs' ends), leaves in bone order.
 * frame < 0: at rest, heads from frame 0 as x = R_0ᵀ(h_0 − T_0) and tails as stored; else posed at
 * that frame: heads as stored, tails moved by their bone (x' = R x + T). Returns the count. */
static int true_joint_points(const SbTraj *t, int frame, float *X) {
    const int TB = t->true_bones, f = frame < 0 ? 0 : frame;
    int n = 0;
    for (int j = 0; j < TB; j++, n++) {
        const double *T = t->true_transforms + ((size_t)f * TB + j) * 12;
        const float *h = t->true_joints + ((size_t)f * TB + j) * 3;
        for (int a = 0; a < 3; a++) {
            double acc = 0;
            if (frame >= 0) acc = h[a];
            else
                for (int b = 0; b < 3; b++) acc += T[b * 4 + a] * (h[b] - T[b * 4 + 3]);
            X[3 * n + a] = (float)acc;
        }
    }
    if (!t->true_tails || !t->true_parents) return n;
    for (int j = 0; j < TB; j++) {
        int leaf = 1;
        for (int k = 0; k < TB; k++) leaf &= t->true_parents[k] != j;
        if (!leaf) continue;
        const double *T = t->true_transforms + ((size_t)f * TB + j) * 12;
        const float *x = t->true_tails + 3 * j;
        for (int a = 0; a < 3; a++)
            X[3 * n + a] = frame < 0 ? x[a] : (float)(T[a * 4] * x[0] + T[a * 4 + 1] * x[1] + T[a * 4 + 2] * x[2] + T[a * 4 + 3]);
        n++;
    }
    return n;
}

int sb_rig_posed_joint_error(const SbResult *r, const float *times, const SbTraj *truth, SbPosedJointError *out,
                             char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const int F = r->ik.nframes, J = r->ik.njoints, TF = truth->nframes, TB = truth->true_bones;
    if (F < 1 || J < 1 || !r->ik.positions) return base_errf(err, errlen, "posed joint error: the rig has no IK frames");
    if (TB < 1 || !truth->true_joints || !truth->true_transforms || !truth->rest)
        return base_errf(err, errlen, "%s: no true rig (bones, joints, transforms)", truth->source);
    if (!times || !truth->times)
        return base_errf(err, errlen, "posed joint error: %s", !times ? "the trajectories carry no frame times"
                                                                   : "the true rig carries no frame times");
    double diag = sqrt(ds_points_diagonal2(truth->rest, truth->npoints));
    if (!(diag > 0)) return base_errf(err, errlen, "%s: the true rest shape is degenerate", truth->source);
    float *X = malloc((size_t)TB * 2 * 3 * sizeof *X), *Y = malloc((size_t)J * 3 * sizeof *Y);
    if (!X || !Y) {
        free(X), free(Y);
        return base_errf(err, errlen, "posed joint error: out of memory");
    }
    double half = TF > 1 ? 0.5 * fabs((double)truth->times[TF - 1] - truth->times[0]) / (TF - 1) + 1e-6 : INFINITY;
    int rc = 0;
    for (int f = 0; f < F && rc == 0; f++) {
        int g = 0;
        for (int k = 1; k < TF; k++)
            if (fabs((double)truth->times[k] - times[f]) < fabs((double)truth->times[g] - times[f])) g = k;
        if (fabs((double)truth->times[g] - times[f]) > half) {
            rc = base_errf(err, errlen, "posed joint error: frame %d (time %g) has no true frame near it (nearest %g)", f,
                           times[f], truth->times[g]);
            break;
        }
        int NT = true_joint_points(truth, g, X);
        for (int k = 0; k < J * 3; k++) Y[k] = (float)r->ik.positions[(size_t)f * J * 3 + k];
        double tf = 100 * mean_nearest(X, NT, Y, J) / diag, ft = 100 * mean_nearest(Y, J, X, NT) / diag;
        out->true_found += tf / F, out->found_true += ft / F;
        out->worst_true_found = fmax(out->worst_true_found, tf), out->worst_found_true = fmax(out->worst_found_true, ft);
        out->true_joints = NT;
    }
    out->frames = F, out->found_joints = J;
    free(X), free(Y);
    return rc;
}

/* the grid's outer layer set outside, so the level set is closed even where the field is
 * still "inside" at the grid's edge (an open tube's winding number near its open ends) */
static void close_field(float *f, const int n[3]) {
    for (int z = 0; z < n[2]; z++)
        for (int y = 0; y < n[1]; y++)
            for (int x = 0; x < n[0]; x++)
                if (x == 0 || y == 0 || z == 0 || x == n[0] - 1 || y == n[1] - 1 || z == n[2] - 1)
                    f[((size_t)z * n[1] + y) * n[0] + x] = fmaxf(f[((size_t)z * n[1] + y) * n[0] + x], 1.0f);
}

/* ---- closing a shell of points (sb_mesh_points) ----------------------------------------------
 * Cells are ((z · n1) + y) · n0 + x; a set is the cells whose byte is nonzero. */
#define CELL(n, x, y, z) (((size_t)(z) * (n)[1] + (y)) * (n)[0] + (x))

/* the Euler characteristic of the union of the set's closed unit cubes: vertices − edges +
 * squares − cubes, each lattice element counted when a cube of the set has it */
static int64_t voxel_euler(const uint8_t *s, const int n[3]) {
    int64_t chi = 0;
    for (int z = 0; z <= n[2]; z++)
        for (int y = 0; y <= n[1]; y++)
            for (int x = 0; x <= n[0]; x++) {
                /* the 8 cubes around lattice vertex (x, y, z): bit (dx | dy << 1 | dz << 2) for cube
                 * (x − 1 + dx, y − 1 + dy, z − 1 + dz) */
                unsigned m = 0;
                for (int c = 0; c < 8; c++) {
                    int X = x - 1 + (c & 1), Y = y - 1 + (c >> 1 & 1), Z = z - 1 + (c >> 2);
                    if (X >= 0 && Y >= 0 && Z >= 0 && X < n[0] && Y < n[1] && Z < n[2] && s[CELL(n, X, Y, Z)]) m |= 1u << c;
                }
                if (!m) continue;
                /* the elements whose lowest vertex this is: the vertex; the edges to +x, +y, +z
                 * (cubes with dx = 1: 0xaa, dy = 1: 0xcc, dz = 1: 0xf0); the squares spanned by +x +y,
                 * +x +z, +y +z (0x88, 0xa0, 0xc0); the cube of the + octant (0x80) */
                chi += 1 - !!(m & 0xaa) - !!(m & 0xcc) - !!(m & 0xf0) + !!(m & 0x88) + !!(m & 0xa0) + !!(m & 0xc0) - !!(m & 0x80);
            }
    return chi;
}

/* the components of the cells with (s[k] != 0) == fg, 26-connected (conn26) or 6-connected,
 * leaving out, with skip_border, those that reach the grid's edge (a complement's outside).
 * lab[k]: the component, −1 for none. */
static int64_t voxel_components(const uint8_t *s, int fg, int conn26, const int n[3], int skip_border, int32_t *lab,
                                int64_t *queue) {
    size_t cells = (size_t)n[0] * n[1] * n[2];
    for (size_t k = 0; k < cells; k++) lab[k] = -1;
    int64_t comps = 0;
    for (size_t k0 = 0; k0 < cells; k0++) {
        if (lab[k0] != -1 || (s[k0] != 0) != fg) continue;
        int64_t qh = 0, qt = 0;
        int border = 0;
        lab[k0] = (int32_t)comps, queue[qt++] = (int64_t)k0;
        while (qh < qt) {
            int64_t k = queue[qh++];
            int x = (int)(k % n[0]), y = (int)(k / n[0] % n[1]), z = (int)(k / ((int64_t)n[0] * n[1]));
            border |= x == 0 || y == 0 || z == 0 || x == n[0] - 1 || y == n[1] - 1 || z == n[2] - 1;
            for (int dz = -1; dz <= 1; dz++)
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        int m = abs(dx) + abs(dy) + abs(dz);
                        if (m == 0 || (!conn26 && m > 1)) continue;
                        int X = x + dx, Y = y + dy, Z = z + dz;
                        if (X < 0 || Y < 0 || Z < 0 || X >= n[0] || Y >= n[1] || Z >= n[2]) continue;
                        size_t q = CELL(n, X, Y, Z);
                        if (lab[q] == -1 && (s[q] != 0) == fg) lab[q] = (int32_t)comps, queue[qt++] = (int64_t)q;
                    }
        }
        if (skip_border && border)
            for (int64_t i = 0; i < qt; i++) lab[queue[i]] = -2; /* seen, not counted */
        else comps++;
    }
    for (size_t k = 0; k < cells; k++)
        if (lab[k] == -2) lab[k] = -1;
    return comps;
}

/* the set's first Betti number — its handles: loops through it that cannot shrink to a point —
 * as b0 + b2 − χ, with b0 its components (26-connected, as the closed cubes touch) and b2 its
 * cavities (the complement's 6-connected components that do not reach the edge) */
static int64_t voxel_handles(const uint8_t *s, const int n[3], int32_t *lab, int64_t *queue, int64_t *b0) {
    *b0 = voxel_components(s, 1, 1, n, 0, lab, queue);
    int64_t b2 = voxel_components(s, 0, 0, n, 1, lab, queue);
    return *b0 + b2 - voxel_euler(s, n);
}

/* Shells: see rigging.h (sb_fill_shells). A gs4d fit's Gaussians lie on the surface — the images
 * see nothing inside — and where the views saw little (a belly, seen from no camera below it)
 * there are none, so the summed density of a big round body is a shell open on one side, and the
 * skeleton of a shell with holes is loops and fans (the multi-view quadruped: 2 components, 3
 * cycles, 12 of its 33 joints inside its torso, 7–17% of the diagonal from any true one). Ray
 * stabbing (Nooruddin & Turk 2003) closes it: a cell outside becomes a candidate when, along at
 * least `votes` of the 13 lines of the 26-neighbourhood, both senses of the line meet the set
 * before the grid's edge. Between two limbs most lines have a sense that leaves the shape (down
 * between the legs, out between an arm and the body), but not all, and a bridge between two
 * limbs that the body already joins is a handle the skeleton turns into a loop. So the
 * candidates are added one 6-connected piece at a time, largest first (all at once, a piece that
 * closes a handle — the inside of a tube — could pay for one that opens another), each kept only
 * if the set gains no handle and no component (a piece floating between four legs, stabbed by
 * the diagonals through them: the monocular quadruped's fill made one under its belly, a speck
 * the skeleton gave two end joints on the root); then cavities the border cannot reach are
 * filled. */
int64_t sb_fill_shells(uint8_t *in, const int n[3], int votes, int keep_handles) {
    size_t cells = (size_t)n[0] * n[1] * n[2];
    uint8_t *hp = malloc(cells), *hm = malloc(cells), *cnt = calloc(cells, 1), *cand = malloc(cells);
    int32_t *lab = malloc(cells * sizeof *lab), *order = NULL;
    int64_t *queue = malloc(cells * sizeof *queue), *size = NULL, added = -1; /* size: pieces' offsets */
    if (!hp || !hm || !cnt || !cand || !lab || !queue) goto done;
    static const int lines[13][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}, {1, -1, 0}, {1, 0, 1}, {1, 0, -1},
                                     {0, 1, 1}, {0, 1, -1}, {1, 1, 1}, {1, 1, -1}, {1, -1, 1}, {1, -1, -1}};
    for (int l = 0; l < 13; l++) {
        for (int sense = 0; sense < 2; sense++) {
            int d[3], lo[3], st[3];
            uint8_t *h = sense ? hm : hp;
            /* h(c) = in(c + d) or h(c + d): swept so that c + d comes before c */
            for (int c = 0; c < 3; c++)
                d[c] = sense ? -lines[l][c] : lines[l][c], st[c] = d[c] > 0 ? -1 : 1, lo[c] = d[c] > 0 ? n[c] - 1 : 0;
            for (int zi = 0, z = lo[2]; zi < n[2]; zi++, z += st[2])
                for (int yi = 0, y = lo[1]; yi < n[1]; yi++, y += st[1])
                    for (int xi = 0, x = lo[0]; xi < n[0]; xi++, x += st[0]) {
                        int X = x + d[0], Y = y + d[1], Z = z + d[2];
                        size_t k = CELL(n, x, y, z);
                        if (X < 0 || Y < 0 || Z < 0 || X >= n[0] || Y >= n[1] || Z >= n[2]) h[k] = 0;
                        else h[k] = in[CELL(n, X, Y, Z)] | h[CELL(n, X, Y, Z)];
                    }
        }
        for (size_t k = 0; k < cells; k++) cnt[k] += hp[k] & hm[k];
    }
    int64_t ncand = 0;
    for (size_t k = 0; k < cells; k++) cand[k] = !in[k] && cnt[k] >= votes, ncand += cand[k];
    added = 0;
    if (ncand) {
        int64_t parts, handles = voxel_handles(in, n, lab, queue, &parts);
        int64_t np = voxel_components(cand, 1, 0, n, 0, lab, queue);
        size = calloc((size_t)np + 1, sizeof *size), order = malloc(((size_t)np + 1) * sizeof *order);
        int64_t *at = malloc(((size_t)np + 1) * sizeof *at);
        if (!size || !order || !at) { free(at), added = -1; goto done; }
        for (size_t k = 0; k < cells; k++)
            if (lab[k] >= 0) size[lab[k] + 1]++;
        for (int64_t i = 0; i < np; i++) size[i + 1] += size[i], order[i] = (int32_t)i; /* offsets */
        memcpy(at, size, ((size_t)np + 1) * sizeof *at);
        int64_t *cellsof = malloc((size_t)ncand * sizeof *cellsof);
        if (!cellsof) { free(at), added = -1; goto done; }
        for (size_t k = 0; k < cells; k++)
            if (lab[k] >= 0) cellsof[at[lab[k]]++] = (int64_t)k;
        for (int64_t i = 1; i < np; i++) /* by size, descending (insertion: pieces are few) */
            for (int64_t j = i; j > 0 && size[order[j] + 1] - size[order[j]] > size[order[j - 1] + 1] - size[order[j - 1]]; j--) {
                int32_t t = order[j];
                order[j] = order[j - 1], order[j - 1] = t;
            }
        for (int64_t i = 0; i < np; i++) {
            int32_t pc = order[i];
            for (int64_t q = size[pc]; q < size[pc + 1]; q++) in[cellsof[q]] = 2;
            int64_t b0, h = voxel_handles(in, n, lab, queue, &b0);
            if ((h <= handles && b0 <= parts) || !keep_handles) handles = h, parts = b0, added += size[pc + 1] - size[pc];
            else
                for (int64_t q = size[pc]; q < size[pc + 1]; q++) in[cellsof[q]] = 0;
        }
        free(at), free(cellsof);
    }
    /* cavities: what the outside does not reach (filling one adds no handle) */
    voxel_components(in, 0, 0, n, 1, lab, queue);
    for (size_t k = 0; k < cells; k++)
        if (lab[k] >= 0) in[k] = 2, added++;
done:
    free(hp), free(hm), free(cnt), free(cand), free(lab), free(order), free(queue), free(size);
    return added;
}

/* Joins fragments (see rigging.h, SbRigOptions.bridge): each piece of the inside set (f < 0,
 * 6-connected as marching cubes separates them) other than the largest, whose closest cell lies
 * within `gap` cells of the largest's surface, gets the cells within one step (6-neighbours) of
 * the segment between the two closest cells set inside (−level) — unless that gives the set a
 * handle (its first Betti number rises: a fragment that touches the body at a corner already,
 * which the bar would make a loop). Returns the pieces joined, −1 if out of memory. */
static int64_t bridge_fragments(float *f, const int n[3], float level, double gap) {
    size_t cells = (size_t)n[0] * n[1] * n[2];
    uint8_t *in = malloc(cells);
    int32_t *lab = malloc(cells * sizeof *lab), *lab2 = malloc(cells * sizeof *lab2);
    int64_t *queue = malloc(cells * sizeof *queue), *queue2 = malloc(cells * sizeof *queue2), *cnt = NULL, joined = -1;
    if (!in || !lab || !lab2 || !queue || !queue2) goto done;
    for (size_t k = 0; k < cells; k++) in[k] = f[k] < 0;
    int64_t nc = voxel_components(in, 1, 0, n, 0, lab, queue), big = 0, nb = 0;
    joined = 0;
    if (nc < 2) goto done;
    if (!(cnt = calloc((size_t)nc, sizeof *cnt))) { joined = -1; goto done; }
    for (size_t k = 0; k < cells; k++)
        if (lab[k] >= 0) cnt[lab[k]]++;
    for (int64_t c = 1; c < nc; c++)
        if (cnt[c] > cnt[big]) big = c;
    for (size_t k = 0; k < cells; k++) { /* the largest piece's surface cells, into queue */
        if (lab[k] != big) continue;
        int x = (int)(k % n[0]), y = (int)(k / n[0] % n[1]), z = (int)(k / ((size_t)n[0] * n[1])), edge = 0;
        for (int d = 0; d < 6 && !edge; d++) {
            int X = x + (d == 0) - (d == 1), Y = y + (d == 2) - (d == 3), Z = z + (d == 4) - (d == 5);
            edge = X < 0 || Y < 0 || Z < 0 || X >= n[0] || Y >= n[1] || Z >= n[2] || lab[CELL(n, X, Y, Z)] != big;
        }
        if (edge) queue[nb++] = (int64_t)k;
    }
    int64_t b0, handles = voxel_handles(in, n, lab2, queue2, &b0);
    for (int64_t c = 0; c < nc; c++) {
        if (c == big) continue;
        double best = INFINITY, a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
        for (size_t k = 0; k < cells; k++) {
            if (lab[k] != c) continue;
            double x = (double)(k % n[0]), y = (double)(k / n[0] % n[1]), z = (double)(k / ((size_t)n[0] * n[1]));
            for (int64_t i = 0; i < nb; i++) {
                int64_t q = queue[i];
                double qx = (double)(q % n[0]), qy = (double)(q / n[0] % n[1]), qz = (double)(q / ((int64_t)n[0] * n[1]));
                double d2 = (x - qx) * (x - qx) + (y - qy) * (y - qy) + (z - qz) * (z - qz);
                if (d2 < best) best = d2, a[0] = x, a[1] = y, a[2] = z, b[0] = qx, b[1] = qy, b[2] = qz;
            }
        }
        if (!(sqrt(best) <= gap)) continue;
        enum { MAXCHG = 7 * 64 };
        size_t chg[MAXCHG];
        int steps = (int)ceil(2 * sqrt(best)) + 1, nchg = 0;
        for (int st = 0; st <= steps && nchg <= MAXCHG - 7; st++) {
            int c0[3];
            for (int i = 0; i < 3; i++) c0[i] = (int)lround(a[i] + (b[i] - a[i]) * st / steps);
            for (int d = 0; d < 7; d++) {
                int X = c0[0] + (d == 1) - (d == 2), Y = c0[1] + (d == 3) - (d == 4), Z = c0[2] + (d == 5) - (d == 6);
                if (X < 1 || Y < 1 || Z < 1 || X >= n[0] - 1 || Y >= n[1] - 1 || Z >= n[2] - 1) continue;
                size_t q = CELL(n, X, Y, Z);
                if (!in[q]) in[q] = 1, chg[nchg++] = q;
            }
        }
        if (voxel_handles(in, n, lab2, queue2, &b0) > handles) {
            for (int i = 0; i < nchg; i++) in[chg[i]] = 0;
            continue;
        }
        for (int i = 0; i < nchg; i++) f[chg[i]] = -level;
        joined++;
    }
done:
    free(in), free(lab), free(lab2), free(queue), free(queue2), free(cnt);
    return joined;
}

/* the level set of the points' summed Gaussian density (σ = 1.5 cells, level ⅓ of the median
 * at the points: a thin gap between points closes, the surface stays near the cloud). With
 * o->density_norm, two passes: the first gives each point the density ρ_i = Σ_j o_j K(p_i − p_j)
 * the opacities make (what a renderer sees); in the second each point splats o_i / ρ_i, so the
 * field is about 1 wherever there are points, however many: a gs4d snake's thin tail has a tenth
 * of the points per length its body has, and at a level of a third of the plain density's median
 * it was not surface at all (the multi-view snake's rig stopped at the fourth of its seven body
 * joints). A point with ρ_i < 2 — less than two opaque points' worth within σ: a floater, or a
 * faint fringe — splats nothing; if no point has 2, the first pass's field is kept (a barely
 * started fit, all faint).
 * Then its shells are closed by sb_fill_shells (o->fill_votes > 0), the pieces within o->bridge
 * cells of the body are joined to it (bridge_fragments), and the mesh's specks left — pieces the
 * points nearest to which carry under SB_SPECK_WEIGHT of the opacity — are left out
 * (sb_mesh_drop_specks). The multi-view humanoid's density had pieces a cell or two from the
 * body, and the skeleton made each two end joints on the root, 8 of its 32 joints. */
int sb_mesh_points(const float *p, const float *opacity, int64_t n, const SbRigOptions *o, DsMesh *out,
                   SbMeshStats *st, char *err, size_t errlen) {
    int grid = o->grid, votes = o->fill_votes;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) lo[c] = fminf(lo[c], p[3 * i + c]), hi[c] = fmaxf(hi[c], p[3 * i + c]);
    float side = fmaxf(hi[0] - lo[0], fmaxf(hi[1] - lo[1], hi[2] - lo[2]));
    if (!(side > 0)) return base_errf(err, errlen, "the points span no volume");
    float h = side / (float)grid, sigma = 1.5f * h, org[3];
    int pad = 6, dim[3];
    for (int c = 0; c < 3; c++) org[c] = lo[c] - pad * h, dim[c] = (int)ceilf((hi[c] - lo[c]) / h) + 2 * pad + 1;
    size_t cells = (size_t)dim[0] * dim[1] * dim[2];
    float *f = calloc(cells, sizeof *f), *at = malloc((size_t)n * sizeof *at);
    if (!f || !at) return free(f), free(at), base_errf(err, errlen, "meshing the points: out of memory");
    int r = (int)ceilf(3 * sigma / h);
    float inv = 1.0f / (2 * sigma * sigma);
    float *w = NULL; /* the second pass's weights */
    for (int pass = 0; pass < (o->density_norm ? 2 : 1); pass++) {
        if (pass) memset(f, 0, cells * sizeof *f);
        for (int64_t i = 0; i < n; i++) {
            int c0[3];
            float wi = w ? w[i] : o->density_norm && opacity ? opacity[i] : 1.0f;
            if (wi == 0) continue;
            for (int c = 0; c < 3; c++) c0[c] = (int)lroundf((p[3 * i + c] - org[c]) / h);
            for (int z = c0[2] - r; z <= c0[2] + r; z++)
                for (int y = c0[1] - r; y <= c0[1] + r; y++)
                    for (int x = c0[0] - r; x <= c0[0] + r; x++) {
                        if (x < 0 || y < 0 || z < 0 || x >= dim[0] || y >= dim[1] || z >= dim[2]) continue;
                        float dx = org[0] + x * h - p[3 * i], dy = org[1] + y * h - p[3 * i + 1], dz = org[2] + z * h - p[3 * i + 2];
                        f[((size_t)z * dim[1] + y) * dim[0] + x] += wi * expf(-(dx * dx + dy * dy + dz * dz) * inv);
                    }
        }
        for (int64_t i = 0; i < n; i++) { /* the density at each point: its nearest grid node's */
            int c0[3];
            for (int c = 0; c < 3; c++) c0[c] = (int)lroundf((p[3 * i + c] - org[c]) / h);
            at[i] = f[((size_t)c0[2] * dim[1] + c0[1]) * dim[0] + c0[0]];
        }
        if (o->density_norm && !pass) {
            if (!(w = malloc((size_t)n * sizeof *w))) return free(f), free(at), base_errf(err, errlen, "meshing the points: out of memory");
            int64_t kept = 0;
            for (int64_t i = 0; i < n; i++) {
                float oi = opacity ? opacity[i] : 1.0f;
                w[i] = at[i] >= 2 ? oi / at[i] : 0.0f, kept += w[i] > 0;
            }
            if (!kept) { /* none (a barely started fit's faint Gaussians): the first pass's field */
                free(w), w = NULL;
                break;
            }
        }
    }
    int64_t nat = 0; /* the level from the points that splatted */
    for (int64_t i = 0; i < n; i++)
        if (!w || w[i] > 0) at[nat++] = at[i];
    free(w);
    qsort(at, (size_t)nat, sizeof *at, cmp_float);
    float level = at[nat / 2] / 3;
    free(at);
    for (size_t k = 0; k < cells; k++) f[k] = level - f[k]; /* negative inside, as an SDF */
    memset(st, 0, sizeof *st);
    if (votes > 0) {
        uint8_t *in = malloc(cells);
        if (!in) return free(f), base_errf(err, errlen, "meshing the points: out of memory");
        for (size_t k = 0; k < cells; k++) in[k] = f[k] < 0;
        st->filled_cells = sb_fill_shells(in, dim, votes, 1);
        if (st->filled_cells < 0) return free(f), free(in), base_errf(err, errlen, "meshing the points: out of memory");
        for (size_t k = 0; k < cells; k++)
            if (in[k] == 2) f[k] = -level; /* as inside as a density of twice the level */
        free(in);
    }
    if (o->bridge > 0 && (st->bridged = bridge_fragments(f, dim, level, o->bridge)) < 0)
        return free(f), base_errf(err, errlen, "meshing the points: out of memory");
    close_field(f, dim);
    int rc = ds_marching_cubes(f, dim[0], dim[1], dim[2], org, h, out);
    free(f);
    if (rc || out->nf < 4) return base_errf(err, errlen, "meshing the points' density gave no surface");
    if ((st->speck_faces = sb_mesh_drop_specks(out, p, opacity, n, SB_SPECK_WEIGHT)) < 0)
        return ds_mesh_free(out), base_errf(err, errlen, "meshing the points: out of memory");
    return 0;
}

int64_t sb_mesh_drop_specks(DsMesh *m, const float *p, const float *w, int64_t n, double frac) {
    int64_t nv = m->nv, nf = m->nf, *par = malloc((size_t)nv * sizeof *par), dropped = 0;
    double *mass = calloc((size_t)nv, sizeof *mass), total = 0;
    int32_t *near = malloc((size_t)(n > 0 ? n : 1) * sizeof *near);
    if (!par || !mass || !near) return free(par), free(mass), free(near), -1;
    for (int64_t i = 0; i < nv; i++) par[i] = i;
    for (int64_t t = 0; t < nf; t++)
        for (int k = 1; k < 3; k++) ds_uf_union(par, m->f[3 * t], m->f[3 * t + k]);
    nearest_all(p, n, m->v, nv, near);
    for (int64_t i = 0; i < n; i++) mass[ds_uf_find(par, near[i])] += w ? w[i] : 1, total += w ? w[i] : 1;
    free(near);
    /* par[i] ← i's new index, or −1 (roots first: a root's own entry is still itself) */
    int64_t kv = 0;
    double most = 0; /* the heaviest piece always stays (a cloud of many small ones: not nothing) */
    for (int64_t i = 0; i < nv; i++) par[i] = ds_uf_find(par, i), most = fmax(most, mass[par[i]]);
    double keep = fmin(frac * total, most);
    for (int64_t i = 0; i < nv; i++) par[i] = mass[par[i]] >= keep ? i : -1;
    for (int64_t i = 0; i < nv; i++)
        if (par[i] >= 0) {
            memmove(m->v + 3 * kv, m->v + 3 * i, 3 * sizeof *m->v);
            if (m->n) memmove(m->n + 3 * kv, m->n + 3 * i, 3 * sizeof *m->n);
            if (m->color) memmove(m->color + 3 * kv, m->color + 3 * i, 3 * sizeof *m->color);
            if (m->scalar) m->scalar[kv] = m->scalar[i];
            par[i] = kv++;
        }
    int64_t kf = 0;
    for (int64_t t = 0; t < nf; t++) {
        if (par[m->f[3 * t]] < 0) {
            dropped++;
            continue;
        }
        for (int k = 0; k < 3; k++) m->f[3 * kf + k] = (int32_t)par[m->f[3 * t + k]];
        kf++;
    }
    m->nv = kv, m->nf = kf;
    free(par), free(mass);
    return dropped;
}


int sb_remesh_winding(const DsMesh *m, int res, DsMesh *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (res < 8 || res > 1024) return base_errf(err, errlen, "remesh: %d cells is out of [8, 1024]", res);
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    float ext = fmaxf(hi[0] - lo[0], fmaxf(hi[1] - lo[1], hi[2] - lo[2]));
    if (!(ext > 0)) return base_errf(err, errlen, "remesh: the mesh spans no volume");
    float h = ext / res, org[3];
    int n[3];
    for (int k = 0; k < 3; k++) n[k] = (int)ceilf((hi[k] - lo[k]) / h) + 5, org[k] = lo[k] - 2 * h;
    int64_t np = (int64_t)n[0] * n[1] * n[2];
    float *q = malloc((size_t)np * 3 * sizeof *q), *f = malloc((size_t)np * sizeof *f);
    DsWinding *w = ds_winding_build(m);
    int rc = -1;
    if (!q || !f || !w) {
        base_errf(err, errlen, "remesh: out of memory");
        goto done;
    }
    for (int64_t i = 0; i < np; i++) {
        int64_t x = i % n[0], y = (i / n[0]) % n[1], z = i / ((int64_t)n[0] * n[1]);
        q[3 * i] = org[0] + x * h, q[3 * i + 1] = org[1] + y * h, q[3 * i + 2] = org[2] + z * h;
    }
    ds_winding_eval_many(w, np, q, f);
    /* |w|: a mesh oriented inwards has w = −1 inside */
    for (int64_t i = 0; i < np; i++) f[i] = 0.5f - fabsf(f[i]);
    close_field(f, n);
    if (ds_marching_cubes(f, n[0], n[1], n[2], org, h, out) || out->nf < 4) {
        ds_mesh_free(out);
        base_errf(err, errlen, "remesh: the winding number's level set is empty");
        goto done;
    }
    rc = 0;
done:
    free(q), free(f);
    if (w) ds_winding_free(w);
    return rc;
}

/* renumbers the joints parents-first (BFS from the root), as SbTree requires */
static int rig_parents_first(SbRig *r, int64_t nnodes) {
    int J = r->njoints;
    int32_t *order = malloc((size_t)J * sizeof *order), *newid = malloc((size_t)J * sizeof *newid);
    float *jt = malloc((size_t)J * 3 * sizeof *jt);
    int32_t *par = malloc((size_t)J * sizeof *par), *jn = malloc((size_t)J * sizeof *jn);
    uint8_t *kind = malloc((size_t)J), *part = malloc((size_t)r->nparts * J + 1);
    int rc = -1;
    if (!order || !newid || !jt || !par || !jn || !kind || !part) goto done;
    int n = 0;
    order[n++] = r->root;
    for (int q = 0; q < n; q++)
        for (int j = 0; j < J; j++)
            if (r->parent[j] == order[q] && j != order[q]) order[n++] = j;
    if (n != J) goto done; /* not a tree rooted at root */
    for (int k = 0; k < J; k++) newid[order[k]] = k;
    for (int k = 0; k < J; k++) {
        int j = order[k];
        memcpy(jt + 3 * k, r->joints + 3 * j, 3 * sizeof *jt);
        par[k] = r->parent[j] < 0 ? -1 : newid[r->parent[j]];
        jn[k] = r->joint_node[j], kind[k] = r->kind[j];
        for (int p = 0; p < r->nparts; p++) part[p * J + k] = r->part[p * J + j];
    }
    for (int64_t i = 0; i < nnodes; i++) r->node_joint[i] = newid[r->node_joint[i]];
    memcpy(r->joints, jt, (size_t)J * 3 * sizeof *jt);
    memcpy(r->parent, par, (size_t)J * sizeof *par);
    memcpy(r->joint_node, jn, (size_t)J * sizeof *jn);
    memcpy(r->kind, kind, (size_t)J);
    if (r->nparts) memcpy(r->part, part, (size_t)r->nparts * J);
    r->root = 0;
    rc = 0;
done:
    free(order), free(newid), free(jt), free(par), free(jn), free(kind), free(part);
    return rc;
}

/* squared distance from x to the segment a–b */
static double seg_d2(const float *x, const float *a, const float *b) {
    double ab[3], ax[3], l = 0, t = 0;
    for (int c = 0; c < 3; c++) ab[c] = b[c] - a[c], ax[c] = x[c] - a[c], l += ab[c] * ab[c], t += ab[c] * ax[c];
    t = l > 0 ? fmin(1, fmax(0, t / l)) : 0;
    double d = 0;
    for (int c = 0; c < 3; c++) d += (ax[c] - t * ab[c]) * (ax[c] - t * ab[c]);
    return d;
}

static int run_ik(const SbTraj *t, SbResult *r, const SbRigOptions *o, SbRigResult *g, char *err, size_t errlen) {
    const SbSkeleton *s = &g->skel;
    const SbRig *rig = &g->rig;
    int F = t->nframes, B = r->skin.nbones, J = rig->njoints;
    int64_t N = t->npoints, M = s->nnodes, NF = r->fitted ? r->nfitted : N; /* the IK sees the fitted points */
    int64_t stride = o->ik_points > 0 && NF > o->ik_points ? (NF + o->ik_points - 1) / o->ik_points : 1;
    int64_t P = (NF + stride - 1) / stride;
    double *nw = calloc((size_t)M * B, sizeof *nw), *nodes = malloc((size_t)F * M * 3 * sizeof *nodes);
    double *X = malloc((size_t)J * 3 * sizeof *X);
    int64_t *off = malloc((size_t)(F + 1) * sizeof *off), *cnt = calloc((size_t)M, sizeof *cnt);
    int32_t *bind = malloc((size_t)M * sizeof *bind), *par = malloc((size_t)J * sizeof *par);
    float *U = malloc((size_t)P * 3 * sizeof *U), *W = calloc((size_t)P * J, sizeof *W), *V = malloc((size_t)F * P * 3 * sizeof *V);
    int rc = -1;
    if (J > SB_IK_MAX_JOINTS) { /* the FK stacks the joints' tensors (tensor_stack's limit) */
        free(nw), free(nodes), free(X), free(off), free(cnt), free(bind), free(par), free(U), free(W), free(V);
        return base_errf(err, errlen, "IK: %d joints, more than the %d the IK handles (a broken skeleton? try --no-ik)", J,
                         SB_IK_MAX_JOINTS);
    }
    if (!nw || !nodes || !X || !off || !cnt || !bind || !par || !U || !W || !V) {
        base_errf(err, errlen, "IK: out of memory");
        goto done;
    }
    /* node weights: the mean SSDR weights of the points that collapsed into each node */
    for (int64_t i = 0; i < N; i++) {
        if (r->fitted && !r->fitted[i]) continue;
        int64_t n = g->point_node[i];
        cnt[n]++;
        for (int j = 0; j < B; j++) nw[n * B + j] += r->skin.weights[i * B + j];
    }
    for (int64_t n = 0; n < M; n++)
        if (cnt[n])
            for (int j = 0; j < B; j++) nw[n * B + j] /= (double)cnt[n];
    for (int64_t n = 0; n < M; n++) /* unreached nodes: the nearest reached node's weights */
        if (!cnt[n]) {
            double best = INFINITY;
            int64_t k = -1;
            for (int64_t m = 0; m < M; m++)
                if (cnt[m] && d2(s->nodes + 3 * n, s->nodes + 3 * m) < best) best = d2(s->nodes + 3 * n, s->nodes + 3 * m), k = m;
            if (k >= 0) memcpy(nw + n * B, nw + k * B, (size_t)B * sizeof *nw);
        }
    /* each frame's skeleton: the nodes moved by LBS of the SSDR bones */
    for (int f = 0; f <= F; f++) off[f] = (int64_t)f * M;
    for (int f = 0; f < F; f++)
        for (int64_t n = 0; n < M; n++) {
            const float *x = s->nodes + 3 * n;
            double *y = nodes + ((size_t)f * M + n) * 3;
            y[0] = y[1] = y[2] = 0;
            for (int j = 0; j < B; j++) {
                double w = nw[n * B + j];
                if (w == 0) continue;
                const double *T = r->skin.transforms + ((size_t)f * B + j) * 12;
                for (int a = 0; a < 3; a++) y[a] += w * (T[a * 4] * x[0] + T[a * 4 + 1] * x[1] + T[a * 4 + 2] * x[2] + T[a * 4 + 3]);
            }
        }
    /* each node bound to the parent end of its nearest bone segment (the root alone: itself) */
    for (int64_t n = 0; n < M; n++) {
        double best = INFINITY;
        bind[n] = 0;
        for (int j = 0; j < J; j++)
            if (rig->parent[j] >= 0) {
                double d = seg_d2(s->nodes + 3 * n, rig->joints + 3 * rig->parent[j], rig->joints + 3 * j);
                if (d < best) best = d, bind[n] = rig->parent[j];
            }
    }
    for (int64_t m = 0, i = -1, k = -1; m < P; m++) {
        while (k < m * stride) { /* i: the (m · stride)-th fitted point (k counts them from 0) */
            i++;
            if (!r->fitted || r->fitted[i]) k++;
        }
        memcpy(U + m * 3, t->rest + i * 3, 3 * sizeof *U);
        W[m * J + bind[g->point_node[i]]] = 1;
        for (int f = 0; f < F; f++) memcpy(V + ((size_t)f * P + m) * 3, t->pos + ((size_t)f * N + i) * 3, 3 * sizeof *V);
    }
    for (int j = 0; j < J; j++) {
        for (int c = 0; c < 3; c++) X[j * 3 + c] = rig->joints[j * 3 + c];
        par[j] = rig->parent[j];
    }
    SbTree tree = {J, X, par};
    /* solved aside, then replacing an earlier IK of r (a second run of the rig stage on the same
     * result, the --ik-true-tree one, ...) instead of leaking it */
    SbIkResult ik;
    memset(&ik, 0, sizeof ik);
    if (sb_ik_solve(&tree, F, nodes, off, P, U, W, V, &o->ik, &ik, err, errlen)) {
        sb_ik_result_free(&ik);
        goto done;
    }
    sb_ik_result_free(&r->ik);
    r->ik = ik;
    free(r->ik_rest), free(r->ik_parents);
    r->ik_rest = X, r->ik_parents = par, X = NULL, par = NULL;
    rc = 0;
done:
    free(nw), free(nodes), free(X), free(off), free(cnt), free(bind), free(par), free(U), free(W), free(V);
    return rc;
}

int sb_rig_run(const SbTraj *t, SbResult *r, const SbRigOptions *o, SbRigResult *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    g->err_true_found = g->err_found_true = -1;
    int64_t N = t->npoints;
    int B = r->skin.nbones;
    float *VW = NULL, *frest = NULL, *fop = NULL;
    int32_t *near = NULL, *fidx = NULL;
    int64_t nfit = N;
    double t0 = base_now();
    /* 1.–2. the closed mesh and its skeleton; an input mesh that is not closed (open tubes, soups)
     * is remeshed as the level ½ of its generalized winding number */
    if (t->faces && t->nfaces > 0) {
        DsMesh in = {0};
        in.nv = N, in.nf = t->nfaces, in.v = t->rest, in.f = t->faces;
        if (ds_mesh_copy(&in, &g->shape)) return base_errf(err, errlen, "skeleton: out of memory");
        if (sb_skeleton_mcf(&g->shape, &o->skel, &g->skel, err, errlen)) {
            ds_mesh_free(&g->shape);
            if (sb_remesh_winding(&in, o->grid, &g->shape, err, errlen)) goto fail;
            g->meshed = 2;
            if (sb_skeleton_mcf(&g->shape, &o->skel, &g->skel, err, errlen)) goto fail;
        }
    } else {
        /* the shape the fitted points make (SbResult.fitted: a transparent Gaussian is not surface) */
        if (r->fitted) {
            int64_t n = 0;
            fidx = malloc((size_t)N * sizeof *fidx), frest = malloc((size_t)N * 3 * sizeof *frest);
            if (!fidx || !frest || (t->opacity && !(fop = malloc((size_t)N * sizeof *fop)))) goto oom;
            for (int64_t i = 0; i < N; i++)
                if (r->fitted[i]) {
                    memcpy(frest + 3 * n, t->rest + 3 * i, 3 * sizeof *frest);
                    if (fop) fop[n] = t->opacity[i];
                    fidx[n++] = (int32_t)i;
                }
            nfit = n;
        }
        if (sb_mesh_points(frest ? frest : t->rest, fop ? fop : t->opacity, nfit, o, &g->shape, &g->mesh_stats, err, errlen)) goto fail;
        g->meshed = 1;
        if (sb_skeleton_mcf(&g->shape, &o->skel, &g->skel, err, errlen)) goto fail;
    }
    int64_t NV = g->shape.nv;
    g->point_node = malloc((size_t)N * sizeof *g->point_node);
    if (!g->point_node) goto oom;
    g->diag = g->skel.diag;
    double t1 = base_now();
    /* 3. joints from the weights on the mesh's vertices */
    const float *Wv = r->skin.weights;
    if (g->meshed) {
        near = malloc((size_t)(NV > N ? NV : N) * sizeof *near);
        VW = malloc((size_t)NV * B * sizeof *VW);
        if (!near || !VW) goto oom;
        if (fidx) { /* vertex → nearest fitted point */
            nearest_all(g->shape.v, NV, frest, nfit, near);
            for (int64_t v = 0; v < NV; v++) near[v] = fidx[near[v]];
        } else
            nearest_all(g->shape.v, NV, t->rest, N, near); /* vertex → nearest point */
        for (int64_t v = 0; v < NV; v++) memcpy(VW + v * B, r->skin.weights + (size_t)near[v] * B, (size_t)B * sizeof *VW);
        Wv = VW;
        nearest_all(t->rest, N, g->shape.v, NV, near); /* point → nearest vertex */
        for (int64_t i = 0; i < N; i++) g->point_node[i] = g->skel.corr[near[i]];
    } else
        for (int64_t i = 0; i < N; i++) g->point_node[i] = g->skel.corr[i];
    if (sb_rig_from_motion(&g->skel, Wv, B, r->skin.transforms, r->skin.nframes, &o->joints, &g->rig, err, errlen)) goto fail;
    if (rig_parents_first(&g->rig, g->skel.nnodes)) {
        base_errf(err, errlen, "joints: the tree does not reach every joint from the root");
        goto fail;
    }
    double t2 = base_now();
    g->seconds_skeleton = t1 - t0, g->seconds_joints = t2 - t1;
    /* against the true rig: its rest joints, from frame 0 */
    if (t->true_bones > 0 && t->true_joints && t->true_transforms) {
        int TB = t->true_bones;
        float *X = malloc((size_t)TB * 2 * 3 * sizeof *X);
        if (!X) goto oom;
        int NT = true_joint_points(t, -1, X);
        g->true_joints = NT;
        g->err_true_found = 100 * mean_nearest(X, NT, g->rig.joints, g->rig.njoints) / g->diag;
        g->err_found_true = 100 * mean_nearest(g->rig.joints, g->rig.njoints, X, NT) / g->diag;
        if (t->true_parents) {
            int32_t *tp = malloc((size_t)(NT + 1) * sizeof *tp);
            if (!tp) { free(X); goto oom; }
            for (int j = 0; j < TB; j++) tp[j] = t->true_parents[j];
            for (int j = 0, k = TB; j < TB && k < NT; j++) { /* the leaf tails, in the order they were added */
                int leaf = 1;
                for (int q = 0; q < TB; q++) leaf &= t->true_parents[q] != j;
                if (leaf) tp[k++] = j;
            }
            int trc = sb_tree_compare(X, tp, NT, g->rig.joints, g->rig.parent, g->rig.njoints, g->diag, 0.05, &g->tree);
            free(tp);
            if (trc) { free(X); goto oom; }
            g->have_tree = 1;
        }
        free(X);
    }
    /* 4. IK */
    if (o->run_ik && run_ik(t, r, o, g, err, errlen)) goto fail;
    g->seconds_ik = base_now() - t2;
    free(VW), free(near), free(frest), free(fop), free(fidx);
    return 0;
oom:
    base_errf(err, errlen, "skeleton: out of memory");
fail:
    free(VW), free(near), free(frest), free(fop), free(fidx);
    sb_rig_result_free(g);
    return -1;
}

/* The view of the skeleton pictures: from the front-right and a little above the box lo..hi, y up. */
static DsCamera view_camera(const float lo[3], const float hi[3], int width) {
    double diag = sqrt((double)(hi[0] - lo[0]) * (hi[0] - lo[0]) + (double)(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (double)(hi[2] - lo[2]) * (hi[2] - lo[2]));
    double c[3] = {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2};
    double eye[3] = {c[0] + 0.55 * diag, c[1] + 0.35 * diag, c[2] + 0.95 * diag}, up[3] = {0, 1, 0};
    DsCamera cam = ds_camera_look_at(eye, c, up, width, width * 3 / 4, 40);
    /* the clip planes in the shape's own units: the look-at default (0.01..100) suits meter-sized
     * shapes, and the assimp models come in centimeters or worse (huesitos is 600 units across,
     * animation_with_skeleton 7000), whose pictures came out blank */
    cam.znear = 0.01 * diag, cam.zfar = 10 * diag;
    return cam;
}

/* The shape in grey with the bars (their own colors) seen through it at 75%: the skeleton is
 * inside the shape, an x-ray shows it. 0, or -1 with err. */
static int render_xray(const DsMesh *shape, const DsMesh *bars, const DsCamera *cam, DsRender *out, char *err,
                       size_t errlen) {
    DsRasterOptions o = ds_raster_options_default();
    o.supersample = 2;
    o.color[0] = 0.75f, o.color[1] = 0.75f, o.color[2] = 0.78f;
    DsRender rb;
    if (ds_raster_render(shape, cam, &o, out, err, errlen)) return -1;
    if (ds_raster_render(bars, cam, &o, &rb, err, errlen)) {
        ds_render_free(out);
        return -1;
    }
    for (int64_t i = 0; i < (int64_t)out->w * out->h; i++)
        for (int k = 0; k < 3; k++) {
            float a = 0.75f * rb.alpha[i];
            out->rgb[3 * i + k] = (1 - a) * out->rgb[3 * i + k] + a * rb.rgb[3 * i + k];
        }
    ds_render_free(&rb);
    return 0;
}

int sb_skeleton_view(const char *ply, const char *png, int width, const DsMesh *m, const SbSkeleton *s,
                     const SbRig *rig, char *err, size_t errlen) {
    float lo[3], hi[3];
    ds_mesh_bbox(m, lo, hi);
    double diag = sqrt((double)(hi[0] - lo[0]) * (hi[0] - lo[0]) + (double)(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (double)(hi[2] - lo[2]) * (hi[2] - lo[2]));
    float grey[3] = {0.75f, 0.75f, 0.78f}, red[3] = {0.85f, 0.1f, 0.1f}, blue[3] = {0.1f, 0.25f, 0.9f};
    DsMesh both = {0}, bars = {0};
    int32_t *e = NULL;
    int rc = -1;
    if (sb_skeleton_to_mesh(s, (float)(0.004 * diag), red, m, grey, &both) ||
        sb_skeleton_to_mesh(s, (float)(0.004 * diag), red, NULL, NULL, &bars))
        goto oom;
    if (rig) { /* the bones as thicker blue bars, appended to the skeleton's */
        SbSkeleton b = {0};
        b.nnodes = rig->njoints, b.nodes = rig->joints;
        e = malloc((size_t)(rig->njoints + 1) * 2 * sizeof *e);
        if (!e) goto oom;
        for (int j = 0; j < rig->njoints; j++)
            if (rig->parent[j] >= 0) e[2 * b.nedges] = rig->parent[j], e[2 * b.nedges + 1] = j, b.nedges++;
        b.edges = e;
        DsMesh jb, merged;
        if (sb_skeleton_to_mesh(&b, (float)(0.008 * diag), blue, &bars, blue, &jb)) goto oom;
        /* keep the copied part's own colors (to_mesh paints it shape_rgb) */
        memcpy(jb.color, bars.color, (size_t)bars.nv * 3 * sizeof(float));
        if (sb_skeleton_to_mesh(&b, (float)(0.008 * diag), blue, &both, blue, &merged)) {
            ds_mesh_free(&jb);
            goto oom;
        }
        memcpy(merged.color, both.color, (size_t)both.nv * 3 * sizeof(float));
        ds_mesh_free(&bars), ds_mesh_free(&both);
        bars = jb, both = merged;
    }
    if (ply && ds_mesh_write(ply, &both, false, err, errlen)) goto done;
    if (png) {
        DsCamera cam = view_camera(lo, hi, width);
        DsRender rs;
        if (render_xray(m, &bars, &cam, &rs, err, errlen)) goto done;
        int wr = ds_render_write_png(png, &rs, false, err, errlen);
        ds_render_free(&rs);
        if (wr) goto done;
    }
    rc = 0;
    goto done;
oom:
    base_errf(err, errlen, "skeleton view: out of memory");
done:
    free(e);
    ds_mesh_free(&both), ds_mesh_free(&bars);
    return rc;
}

int sb_rig_h5_write(hid_t f, const SbRigResult *g) {
    const SbSkeleton *s = &g->skel;
    const SbRig *r = &g->rig;
    const size_t ch = 1 << 20;
    hsize_t dn[2] = {(hsize_t)s->nnodes, 3}, de[2] = {(hsize_t)s->nedges, 2}, dc[1] = {(hsize_t)s->nsurf},
            dj[2] = {(hsize_t)r->njoints, 3}, dp[1] = {(hsize_t)r->njoints}, dq[2] = {(hsize_t)r->nparts, (hsize_t)r->njoints},
            dnn[1] = {(hsize_t)s->nnodes};
    bool ok = base_h5_write_checked(f, "skeleton/nodes", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dn, s->nodes, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "skeleton/edges", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, de, s->edges, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "skeleton/corr", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dc, s->corr, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "skeleton/node_joint", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dnn, r->node_joint, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "joints/positions", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dj, r->joints, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "joints/parents", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dp, r->parent, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "joints/node", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dp, r->joint_node, ch, false) == 0;
    ok = ok && base_h5_write_checked(f, "joints/kind", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, dp, r->kind, ch, false) == 0;
    if (r->nparts > 0)
        ok = ok && base_h5_write_checked(f, "joints/parts", H5T_STD_U8LE, H5T_NATIVE_UINT8, 2, dq, r->part, ch, false) == 0;
    ok = ok && base_h5_attr_i64(f, "skeleton_meshed_from_points", g->meshed) == 0;
    ok = ok && base_h5_attr_i64(f, "joints", r->njoints) == 0;
    char num[64];
    if (g->err_true_found >= 0) {
        snprintf(num, sizeof num, "%.6g", g->err_true_found);
        ok = ok && base_h5_attr_str(f, "joint_err_true_to_found_pct_diag", num) == 0;
        snprintf(num, sizeof num, "%.6g", g->err_found_true);
        ok = ok && base_h5_attr_str(f, "joint_err_found_to_true_pct_diag", num) == 0;
        ok = ok && base_h5_attr_i64(f, "true_joints", g->true_joints) == 0;
    }
    if (g->have_tree) {
        const SbTreeCompare *c = &g->tree;
        ok = ok && base_h5_attr_i64(f, "tree_true_joints_distinct", c->true_joints) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_joints_matched", c->matched) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_bones_between_matched", c->edges) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_bones_kept", c->kept) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_ends_true", c->true_ends) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_ends_found", c->found_ends) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_branches_true", c->true_branches) == 0;
        ok = ok && base_h5_attr_i64(f, "tree_branches_found", c->found_branches) == 0;
    }
    snprintf(num, sizeof num, "%.6g", g->seconds_skeleton);
    ok = ok && base_h5_attr_str(f, "seconds_skeleton", num) == 0;
    snprintf(num, sizeof num, "%.6g", g->seconds_joints);
    ok = ok && base_h5_attr_str(f, "seconds_joints", num) == 0;
    snprintf(num, sizeof num, "%.6g", g->seconds_ik);
    ok = ok && base_h5_attr_str(f, "seconds_ik", num) == 0;
    return ok ? 0 : -1;
}

int sb_rig_animation(const char *gif_path, const char *mp4_path, const SbTraj *t, const SbResult *r,
                     const SbRigResult *g, int width, int max_frames, char *err, size_t errlen) {
    const SbIkResult *ik = &r->ik;
    if (ik->njoints < 1 || ik->nframes < 1 || !r->ik_parents)
        return base_errf(err, errlen, "rig animation: no IK result to draw"), -1;
    int F = ik->nframes < t->nframes ? ik->nframes : t->nframes, J = ik->njoints;
    int stride = max_frames > 0 && F > max_frames ? (F + max_frames - 1) / max_frames : 1;
    int nout = (F + stride - 1) / stride;
    int64_t N = t->npoints;
    bool own = t->faces && t->nfaces > 0; /* the input's own posed faces; else g->shape moved by LBS */
    const DsMesh *rest = &g->shape;
    int64_t nv = own ? N : rest->nv;
    int B = r->skin.nbones;
    DsMesh frame = {0};
    int32_t *near = NULL, *e = NULL;
    float *img = NULL;
    int rc = -1;
    frame.nv = nv, frame.nf = own ? t->nfaces : rest->nf;
    frame.v = malloc((size_t)(nv + 1) * 3 * sizeof *frame.v);
    frame.f = own ? t->faces : rest->f; /* borrowed: not freed below */
    e = malloc((size_t)(J + 1) * 2 * sizeof *e);
    float *jx = malloc((size_t)(J + 1) * 3 * sizeof *jx);
    if (!own) near = malloc((size_t)(nv + 1) * sizeof *near);
    if (!frame.v || !e || !jx || (!own && !near)) goto oom;
    /* one camera for every frame: the box of all frames' points */
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int f = 0; f < F; f++)
        for (int64_t i = 0; i < N; i++)
            for (int k = 0; k < 3; k++) {
                float x = t->pos[((size_t)f * N + i) * 3 + k];
                lo[k] = x < lo[k] ? x : lo[k], hi[k] = x > hi[k] ? x : hi[k];
            }
    double diag = sqrt((double)(hi[0] - lo[0]) * (hi[0] - lo[0]) + (double)(hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (double)(hi[2] - lo[2]) * (hi[2] - lo[2]));
    DsCamera cam = view_camera(lo, hi, width);
    if (!own) /* each vertex of the skeleton's mesh follows the SSDR weights of its nearest point */
        for (int64_t v = 0; v < nv; v++) {
            double best = INFINITY;
            near[v] = 0;
            for (int64_t i = 0; i < N; i++) {
                double d = 0;
                for (int k = 0; k < 3; k++) d += pow(rest->v[3 * v + k] - t->rest[3 * i + k], 2);
                if (d < best) best = d, near[v] = (int32_t)i;
            }
        }
    SbSkeleton bones = {0};
    bones.nnodes = J, bones.nodes = jx, bones.edges = e;
    for (int j = 0; j < J; j++)
        if (r->ik_parents[j] >= 0) e[2 * bones.nedges] = r->ik_parents[j], e[2 * bones.nedges + 1] = j, bones.nedges++;
    const float blue[3] = {0.1f, 0.25f, 0.9f};
    for (int q = 0; q < nout; q++) {
        int f = q * stride;
        if (own) memcpy(frame.v, t->pos + (size_t)f * N * 3, (size_t)N * 3 * sizeof(float));
        else
            for (int64_t v = 0; v < nv; v++) {
                const float *w = r->skin.weights + (size_t)near[v] * B, *x = rest->v + 3 * v;
                double y[3] = {0, 0, 0};
                for (int b = 0; b < B; b++) {
                    if (w[b] == 0) continue;
                    const double *T = r->skin.transforms + ((size_t)f * B + b) * 12;
                    for (int a = 0; a < 3; a++) y[a] += w[b] * (T[4 * a] * x[0] + T[4 * a + 1] * x[1] + T[4 * a + 2] * x[2] + T[4 * a + 3]);
                }
                for (int a = 0; a < 3; a++) frame.v[3 * v + a] = (float)y[a];
            }
        for (int64_t k = 0; k < (int64_t)J * 3; k++) jx[k] = (float)ik->positions[(size_t)f * J * 3 + k];
        DsMesh bars;
        if (sb_skeleton_to_mesh(&bones, (float)(0.008 * diag), blue, NULL, NULL, &bars)) goto oom;
        DsRender rs;
        int rr = render_xray(&frame, &bars, &cam, &rs, err, errlen);
        ds_mesh_free(&bars);
        if (rr) goto done;
        if (!img) {
            img = malloc((size_t)nout * rs.w * rs.h * 3 * sizeof *img);
            if (!img) {
                ds_render_free(&rs);
                goto oom;
            }
        }
        memcpy(img + (size_t)q * rs.w * rs.h * 3, rs.rgb, (size_t)rs.w * rs.h * 3 * sizeof *img);
        int w = rs.w, h = rs.h;
        ds_render_free(&rs);
        if (q == nout - 1 && gif_path && ds_gif_write(gif_path, img, w, h, nout, 8, err, errlen)) goto done;
        if (q == nout - 1 && mp4_path && ds_video_write_mp4(mp4_path, img, w, h, nout, 12.5, err, errlen)) goto done;
    }
    rc = 0;
    goto done;
oom:
    base_errf(err, errlen, "rig animation: out of memory");
done:
    frame.f = NULL;
    ds_mesh_free(&frame);
    free(near), free(e), free(jx), free(img);
    return rc;
}
