/* models/skelebones/joints.c — joints, tree and parts; see joints.h. */
#include "base/errbuf.h"
#include "models/skelebones/joints.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_joint_defaults(SbJointOptions *o) {
    o->tau = 0.3;
    o->grad_len = 0.05;
    o->merge_rel = 0.03;
    o->prune_rel = 0.05;
    o->merge_bone = 1.0 / 3.0;
}

void sb_rig_free(SbRig *r) {
    if (!r) return;
    free(r->joints), free(r->parent), free(r->joint_node), free(r->kind), free(r->node_joint), free(r->part);
    memset(r, 0, sizeof *r);
}

static double ndist(const SbSkeleton *s, int64_t a, int64_t b) {
    const float *p = s->nodes + 3 * a, *q = s->nodes + 3 * b;
    double d0 = p[0] - q[0], d1 = p[1] - q[1], d2 = p[2] - q[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2);
}

typedef struct {
    int64_t *off; /* nnodes + 1 */
    int32_t *nb;  /* neighbor node */
    int32_t *eid; /* edge index */
} Adj;

static int adj_build(const SbSkeleton *s, Adj *a) {
    int64_t n = s->nnodes;
    a->off = calloc((size_t)n + 1, sizeof *a->off);
    a->nb = malloc((size_t)(2 * s->nedges + 1) * sizeof *a->nb);
    a->eid = malloc((size_t)(2 * s->nedges + 1) * sizeof *a->eid);
    int64_t *fill = malloc((size_t)(n + 1) * sizeof *fill);
    if (!a->off || !a->nb || !a->eid || !fill) {
        free(fill);
        return -1;
    }
    for (int64_t e = 0; e < s->nedges; e++) a->off[s->edges[2 * e] + 1]++, a->off[s->edges[2 * e + 1] + 1]++;
    for (int64_t i = 0; i < n; i++) a->off[i + 1] += a->off[i];
    memcpy(fill, a->off, (size_t)n * sizeof *fill);
    for (int64_t e = 0; e < s->nedges; e++) {
        int32_t u = s->edges[2 * e], v = s->edges[2 * e + 1];
        a->nb[fill[u]] = v, a->eid[fill[u]++] = (int32_t)e;
        a->nb[fill[v]] = u, a->eid[fill[v]++] = (int32_t)e;
    }
    free(fill);
    return 0;
}

static void adj_free(Adj *a) { free(a->off), free(a->nb), free(a->eid); }

/* degree counting only edges not pruned */
static int64_t deg_eff(const Adj *a, const uint8_t *pruned_e, int64_t i) {
    int64_t d = 0;
    for (int64_t q = a->off[i]; q < a->off[i + 1]; q++) d += !pruned_e[a->eid[q]];
    return d;
}
#define DEG(a, i) deg_eff((a), pe, (i))

/* Each node's joint (the nearest along the curve: Dijkstra from all joints at once, O(n²) —
 * skeletons have a few hundred nodes) and the joint graph: two joints are adjacent when an edge
 * joins their regions (the path between them crosses no other joint's region). CSR in
 * *off (nj + 1) and *adj; *np the number of region-crossing edges. 0 or -1. */
static int joint_graph(const SbSkeleton *s, const Adj *A, const int32_t *jnode, int nj, double *dist,
                       int32_t *node_joint, int32_t **off, int32_t **adj, int64_t *np_out) {
    int64_t n = s->nnodes;
    for (int64_t i = 0; i < n; i++) dist[i] = INFINITY, node_joint[i] = -1;
    for (int j = 0; j < nj; j++) dist[jnode[j]] = 0, node_joint[jnode[j]] = j;
    uint8_t *done = calloc((size_t)n + 1, 1);
    if (!done) return -1;
    for (;;) {
        int64_t u = -1;
        for (int64_t i = 0; i < n; i++)
            if (!done[i] && isfinite(dist[i]) && (u < 0 || dist[i] < dist[u])) u = i;
        if (u < 0) break;
        done[u] = 1;
        for (int64_t q = A->off[u]; q < A->off[u + 1]; q++) {
            int32_t v = A->nb[q];
            double d = dist[u] + ndist(s, u, v);
            if (d < dist[v]) dist[v] = d, node_joint[v] = node_joint[u];
        }
    }
    free(done);
    int32_t *pairs = malloc((size_t)(2 * s->nedges + 2) * sizeof *pairs);
    int64_t np = 0;
    if (!pairs) return -1;
    for (int64_t e = 0; e < s->nedges; e++) {
        int32_t a = node_joint[s->edges[2 * e]], b = node_joint[s->edges[2 * e + 1]];
        if (a < 0 || b < 0 || a == b) continue;
        pairs[2 * np] = a, pairs[2 * np + 1] = b, np++;
    }
    *off = calloc((size_t)nj + 1, sizeof **off);
    *adj = malloc((size_t)(2 * np + 1) * sizeof **adj);
    int32_t *fill = malloc((size_t)(nj + 1) * sizeof *fill);
    if (!*off || !*adj || !fill) {
        free(pairs), free(fill);
        return -1;
    }
    for (int64_t p = 0; p < np; p++) (*off)[pairs[2 * p] + 1]++, (*off)[pairs[2 * p + 1] + 1]++;
    for (int j = 0; j < nj; j++) (*off)[j + 1] += (*off)[j];
    memcpy(fill, *off, (size_t)nj * sizeof *fill);
    for (int64_t p = 0; p < np; p++) (*adj)[fill[pairs[2 * p]]++] = pairs[2 * p + 1], (*adj)[fill[pairs[2 * p + 1]]++] = pairs[2 * p];
    free(fill), free(pairs);
    *np_out = np;
    return 0;
}

/* The articulation between bones a and b seen at the skeleton point c: the point p that the two
 * bones' per-frame transforms move alike, argmin Σ_f ‖(R_a − R_b) p + (t_a − t_b)‖² + μF‖p − c‖²
 * (Le & Deng 2014's joint estimate). A rotation about one axis leaves p free along the axis; the
 * term μ (rad², (2°)²) resolves that by the point of the axis nearest c, and keeps p at c when
 * the two bones hardly rotate against each other (they split one rigid part: nothing to locate).
 * T: F × B × 12, rows [R | t] mapping rest to frame f. */
static void rotation_centre(const double *T, int F, int nb, int a, int b, const double c[3], double p[3]) {
    const double mu = pow(2 * M_PI / 180, 2);
    double M[9] = {0}, r[3] = {0};
    for (int f = 0; f < F; f++) {
        const double *A = T + ((size_t)f * nb + a) * 12, *B = T + ((size_t)f * nb + b) * 12;
        double D[9], d[3];
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) D[i * 3 + j] = A[i * 4 + j] - B[i * 4 + j];
            d[i] = A[i * 4 + 3] - B[i * 4 + 3];
        }
        for (int i = 0; i < 3; i++) /* Dᵀ D and −Dᵀ d */
            for (int k = 0; k < 3; k++) {
                M[i * 3 + k] += D[0 * 3 + i] * D[0 * 3 + k] + D[1 * 3 + i] * D[1 * 3 + k] + D[2 * 3 + i] * D[2 * 3 + k];
                r[i] -= D[k * 3 + i] * d[k];
            }
    }
    for (int i = 0; i < 3; i++) M[i * 4] += mu * F, r[i] += mu * F * c[i];
    /* 3 × 3 solve by Cramer's rule: M is symmetric positive definite (μ > 0) */
    double det = M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) + M[2] * (M[3] * M[7] - M[4] * M[6]);
    for (int k = 0; k < 3; k++) {
        double Mk[9];
        memcpy(Mk, M, sizeof Mk);
        for (int i = 0; i < 3; i++) Mk[i * 3 + k] = r[i];
        p[k] = (Mk[0] * (Mk[4] * Mk[8] - Mk[5] * Mk[7]) - Mk[1] * (Mk[3] * Mk[8] - Mk[5] * Mk[6]) +
                Mk[2] * (Mk[3] * Mk[7] - Mk[4] * Mk[6])) / det;
    }
}

static int dominant(const double *Wn, int nb, int32_t node) {
    int am = 0;
    for (int c = 1; c < nb; c++)
        if (Wn[(int64_t)node * nb + c] > Wn[(int64_t)node * nb + am]) am = c;
    return am;
}

int sb_rig_from_skeleton(const SbSkeleton *s, const float *W, int nb, const SbJointOptions *opt, SbRig *out,
                         char *err, size_t errlen) {
    return sb_rig_from_motion(s, W, nb, NULL, 0, opt, out, err, errlen);
}

int sb_rig_from_motion(const SbSkeleton *s, const float *W, int nb, const double *T, int nframes,
                       const SbJointOptions *opt, SbRig *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    SbJointOptions o;
    if (opt) o = *opt;
    else sb_joint_defaults(&o);
    int64_t n = s->nnodes;
    if (n < 1 || nb < 1 || !W) return (void)base_errf(err, errlen, "joints: empty skeleton or no weights"), -1;
    int rc = -1;
    Adj A = {0};
    double *Wn = calloc((size_t)n * nb, sizeof *Wn), *cnt = calloc((size_t)n, sizeof *cnt);
    int32_t *jn = malloc((size_t)(n + 1) * sizeof *jn); /* node → joint index, −1 */
    uint8_t *ev = calloc((size_t)s->nedges + 1, 1);     /* edges walked */
    uint8_t *pe = calloc((size_t)s->nedges + 1, 1);     /* edges of pruned spurs */
    int32_t *chain = malloc((size_t)(n + 2) * sizeof *chain), *chain_e = malloc((size_t)(n + 2) * sizeof *chain_e);
    int32_t *jnode = malloc((size_t)(n + 1) * sizeof *jnode);
    uint8_t *jkind = malloc((size_t)(n + 1));
    double *arc = malloc((size_t)(n + 2) * sizeof *arc), *gs = malloc((size_t)(n + 2) * sizeof *gs);
    int nj = 0;
    double *dist = NULL;
    int32_t *queue = NULL, *jadj = NULL, *jadj_off = NULL, *stack = NULL;
    if (!Wn || !cnt || !jn || !ev || !pe || !chain || !chain_e || !jnode || !jkind || !arc || !gs || adj_build(s, &A)) goto oom;
    /* 1. node weights */
    for (int64_t v = 0; v < s->nsurf; v++) {
        int32_t c = s->corr[v];
        for (int b = 0; b < nb; b++) Wn[(int64_t)c * nb + b] += W[v * nb + b];
        cnt[c] += 1;
    }
    for (int64_t i = 0; i < n; i++)
        if (cnt[i] > 0)
            for (int b = 0; b < nb; b++) Wn[i * nb + b] /= cnt[i];
    for (int pass = 0; pass < n; pass++) {
        int64_t missing = 0, filled = 0;
        for (int64_t i = 0; i < n; i++) {
            if (cnt[i] > 0) continue;
            missing++;
            int k = 0;
            for (int64_t q = A.off[i]; q < A.off[i + 1]; q++) {
                int32_t j = A.nb[q];
                if (cnt[j] <= 0) continue;
                for (int b = 0; b < nb; b++) Wn[i * nb + b] += Wn[(int64_t)j * nb + b];
                k++;
            }
            if (k) {
                for (int b = 0; b < nb; b++) Wn[i * nb + b] /= k;
                cnt[i] = -1; /* filled this pass; counts as weighted from the next */
                filled++;
            }
        }
        for (int64_t i = 0; i < n; i++)
            if (cnt[i] < 0) cnt[i] = 1e-9;
        if (!missing || !filled) break;
    }
    double h = o.grad_len * s->diag; /* 2. the gradient: per chain, below */
    /* 3a. spurs: an end chain (end node to the first branch node) shorter than prune_rel ×
     * diagonal is a contraction artifact — rounded tips and surface bumps grow them — not a
     * limb; it gets no joint and its nodes go to the branch node's joint. */
    double plen = o.prune_rel * s->diag;
    for (int64_t i = 0; i < n; i++) {
        if (A.off[i + 1] - A.off[i] != 1) continue;
        int64_t len = 0;
        double arc = 0;
        int32_t prev = -1, cur = (int32_t)i;
        for (;;) {
            int64_t q = -1;
            for (int64_t r = A.off[cur]; r < A.off[cur + 1]; r++)
                if (A.nb[r] != prev) q = r;
            if (q < 0) break;
            chain_e[len++] = A.eid[q];
            arc += ndist(s, cur, A.nb[q]);
            prev = cur, cur = A.nb[q];
            if (A.off[cur + 1] - A.off[cur] != 2 || arc >= plen) break;
        }
        if (arc < plen && A.off[cur + 1] - A.off[cur] >= 3)
            for (int64_t k = 0; k < len; k++) pe[chain_e[k]] = 1;
    }
    /* 3a'. fans: an end chain of any length that leaves a node where four or more curves meet,
     * with weights that never differ from that node's by τ along it (no bone changes along it:
     * nothing articulates there), is pruned the same way. Flat or flared parts contract to such
     * fans — huesitos' foot gave a node with 24 single long edges, 33 ends against the rig's 3.
     * At a plain fork (three curves) a limb that does not move against its parent is kept: the
     * benchmark bird has one, 13% of the diagonal long with weight change 0.06, whose end is a
     * true joint. Repeated until nothing changes, as pruning a fan lowers its degree; a fan
     * keeps three curves, so nothing is pruned to nothing. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int64_t i = 0; i < n; i++) {
            if (DEG(&A, i) != 1) continue;
            int64_t len = 0;
            double tvmax = 0;
            int32_t prev = -1, cur = (int32_t)i;
            for (;;) {
                int64_t q = -1;
                for (int64_t r = A.off[cur]; r < A.off[cur + 1]; r++)
                    if (A.nb[r] != prev && !pe[A.eid[r]]) q = r;
                if (q < 0) break;
                chain_e[len] = A.eid[q], chain[len++] = cur;
                prev = cur, cur = A.nb[q];
                if (DEG(&A, cur) != 2) break;
            }
            if (DEG(&A, cur) < 4) continue;
            for (int64_t k = 0; k < len; k++) {
                double tv = 0;
                for (int c = 0; c < nb; c++) tv += fabs(Wn[(int64_t)chain[k] * nb + c] - Wn[(int64_t)cur * nb + c]);
                if (0.5 * tv > tvmax) tvmax = 0.5 * tv;
            }
            if (tvmax <= o.tau) {
                for (int64_t k = 0; k < len; k++) pe[chain_e[k]] = 1;
                changed = 1;
            }
        }
    }
    memcpy(ev, pe, (size_t)s->nedges);
    /* 3. joints: ends and branches first */
    for (int64_t i = 0; i < n; i++) {
        jn[i] = -1;
        if (A.off[i + 1] > A.off[i] && DEG(&A, i) == 0) continue; /* a pruned spur's node */
        int64_t d = DEG(&A, i);
        if (d == 1 || d >= 3 || (d == 0 && n == 1)) {
            jn[i] = nj, jnode[nj] = (int32_t)i, jkind[nj] = d == 1 || d == 0 ? SB_JOINT_END : SB_JOINT_BRANCH;
            nj++;
        }
    }
    if (nj == 0) { /* a closed loop: start anywhere */
        jn[0] = 0, jnode[0] = 0, jkind[0] = SB_JOINT_BRANCH, nj = 1;
    }
    double merge = o.merge_rel * s->diag;
    /* chains between the nodes of degree ≠ 2 (or the loop start) */
    int nfixed = nj;
    for (int js = 0; js < nfixed; js++) {
        int32_t start = jnode[js];
        for (int64_t q0 = A.off[start]; q0 < A.off[start + 1]; q0++) {
            if (ev[A.eid[q0]]) continue;
            int64_t len = 0;
            chain[len] = start;
            int32_t cur = start;
            int64_t q = q0;
            for (;;) {
                ev[A.eid[q]] = 1;
                chain_e[len] = A.eid[q];
                cur = A.nb[q];
                chain[++len] = cur;
                if (DEG(&A, cur) != 2 || jn[cur] >= 0) break;
                int64_t nq = -1;
                for (int64_t r = A.off[cur]; r < A.off[cur + 1]; r++)
                    if (!ev[A.eid[r]]) nq = r;
                if (nq < 0) break;
                q = nq;
            }
            /* the gradient smoothed along the chain: the net weight change across a window of
             * arc length h centred on the edge (clamped to the chain), per h. Per-edge changes
             * of noisy weights dip below τ inside one transition and split it into several runs
             * (several joints for one articulation); the net change over h does not, and weight
             * that goes back and forth cancels. */
            arc[0] = 0;
            for (int64_t k = 0; k < len; k++) arc[k + 1] = arc[k] + ndist(s, chain[k], chain[k + 1]);
            for (int64_t k = 0, lo = 0, hi = 0; k < len; k++) {
                double mid = 0.5 * (arc[k] + arc[k + 1]);
                while (lo < k && arc[lo + 1] <= mid - 0.5 * h) lo++;
                if (hi < k + 1) hi = k + 1;
                while (hi < len && arc[hi] < mid + 0.5 * h) hi++;
                double tv = 0;
                for (int c = 0; c < nb; c++)
                    tv += fabs(Wn[(int64_t)chain[hi] * nb + c] - Wn[(int64_t)chain[lo] * nb + c]);
                double span = arc[hi] - arc[lo];
                gs[k] = 0.5 * tv * h / (span > 1e-12 * s->diag ? span : 1e-12 * s->diag);
            }
            /* runs of edges with g > tau */
            for (int64_t k = 0; k < len;) {
                if (gs[k] <= o.tau) {
                    k++;
                    continue;
                }
                int64_t k1 = k;
                double tot = 0;
                while (k1 < len && gs[k1] > o.tau) {
                    int32_t a = chain[k1], b = chain[k1 + 1];
                    double tv = 0;
                    for (int c = 0; c < nb; c++) tv += fabs(Wn[(int64_t)a * nb + c] - Wn[(int64_t)b * nb + c]);
                    tot += tv;
                    k1++;
                }
                /* with the bones' motion: a joint at each change of dominant bone inside the run,
                 * placed at the two bones' common rotation centre and moved to the chain node
                 * nearest it. SSDR with more bones than the rig has puts a bone on the blend zone
                 * of an articulation, so one articulation shows as two weight crossovers on
                 * either side of it (a → blend, blend → b) and, on a chain of evenly spaced
                 * articulations (a snake), the gradient never falls below τ between them: one
                 * run spans several articulations. Both crossovers of one articulation have the
                 * same rotation centre — the articulation — and the merge below makes them one
                 * joint. */
                int placed = 0;
                for (int64_t m = k; T && m < k1; m++) {
                    int ba = dominant(Wn, nb, chain[m]), bb = dominant(Wn, nb, chain[m + 1]);
                    if (ba == bb) continue;
                    double c[3], p[3];
                    for (int i = 0; i < 3; i++)
                        c[i] = 0.5 * (s->nodes[3 * (int64_t)chain[m] + i] + s->nodes[3 * (int64_t)chain[m + 1] + i]);
                    rotation_centre(T, nframes, nb, ba, bb, c, p);
                    int64_t best_k = m;
                    double bd = INFINITY;
                    for (int64_t q = 0; q <= len; q++) {
                        const float *x = s->nodes + 3 * (int64_t)chain[q];
                        double d = (x[0] - p[0]) * (x[0] - p[0]) + (x[1] - p[1]) * (x[1] - p[1]) + (x[2] - p[2]) * (x[2] - p[2]);
                        if (d < bd) bd = d, best_k = q;
                    }
                    int32_t node = chain[best_k];
                    placed++;
                    bool near = jn[node] >= 0;
                    for (int j = 0; j < nj && !near; j++) near = ndist(s, jnode[j], node) < merge;
                    if (!near) jn[node] = nj, jnode[nj] = node, jkind[nj] = SB_JOINT_GRADIENT, nj++;
                }
                if (placed) {
                    k = k1;
                    continue;
                }
                double acc = 0;
                int64_t pick = k1;
                for (int64_t m = k; m < k1; m++) {
                    int32_t a = chain[m], b = chain[m + 1];
                    double tv = 0;
                    for (int c = 0; c < nb; c++) tv += fabs(Wn[(int64_t)a * nb + c] - Wn[(int64_t)b * nb + c]);
                    if (acc + tv >= 0.5 * tot) {
                        pick = (acc + tv - 0.5 * tot < 0.5 * tot - acc) ? m + 1 : m;
                        break;
                    }
                    acc += tv;
                }
                int32_t node = chain[pick];
                bool near = jn[node] >= 0;
                for (int j = 0; j < nj && !near; j++) near = ndist(s, jnode[j], node) < merge;
                if (!near) jn[node] = nj, jnode[nj] = node, jkind[nj] = SB_JOINT_GRADIENT, nj++;
                k = k1;
            }
        }
    }
    /* 4. node → joint (nearest along the curve) and the joint graph; then 3b. merges, each
     * followed by a fresh 4 */
    dist = malloc((size_t)(n + 1) * sizeof *dist);
    queue = malloc((size_t)(n + 1) * sizeof *queue);
    out->node_joint = malloc((size_t)(n + 1) * sizeof *out->node_joint);
    if (!dist || !queue || !out->node_joint) goto oom;
    int64_t np = 0;
    for (;;) {
        free(jadj), free(jadj_off);
        jadj = jadj_off = NULL;
        if (joint_graph(s, &A, jnode, nj, dist, out->node_joint, &jadj_off, &jadj, &np)) goto oom;
        /* 3b. a bone (joint-graph edge) shorter than merge_bone × the mean length of the bones
         * next to it joins two joints that are one articulation seen twice — both sides of a
         * hip where the legs leave the curve at slightly different nodes, a gradient joint just
         * beside a fork. The shortest such bone, relative to its neighbours, goes first; of its
         * two joints the one of lower rank (gradient < branch < end) is dropped, and ends are
         * never dropped (that would shorten a limb). */
        int ba = -1, bb = -1;
        double best = o.merge_bone;
        for (int a = 0; a < nj; a++)
            for (int32_t q = jadj_off[a]; q < jadj_off[a + 1]; q++) {
                int b = jadj[q];
                if (b <= a) continue;
                double l = ndist(s, jnode[a], jnode[b]), sum = 0;
                int cnt_n = 0;
                for (int side = 0; side < 2; side++) {
                    int c = side ? b : a, other = side ? a : b;
                    for (int32_t r = jadj_off[c]; r < jadj_off[c + 1]; r++)
                        if (jadj[r] != other) sum += ndist(s, jnode[c], jnode[jadj[r]]), cnt_n++;
                }
                if (!cnt_n || sum <= 0) continue;
                double ratio = l / (sum / cnt_n);
                if (ratio < best && !(jkind[a] == SB_JOINT_END && jkind[b] == SB_JOINT_END)) best = ratio, ba = a, bb = b;
            }
        if (ba < 0) break;
        /* rank: end 2, branch 1, gradient 0 */
        int ra = jkind[ba] == SB_JOINT_END ? 2 : jkind[ba] == SB_JOINT_BRANCH ? 1 : 0;
        int rb = jkind[bb] == SB_JOINT_END ? 2 : jkind[bb] == SB_JOINT_BRANCH ? 1 : 0;
        int drop = ra < rb ? ba : rb < ra ? bb : (jadj_off[ba + 1] - jadj_off[ba] < jadj_off[bb + 1] - jadj_off[bb] ? ba : bb);
        jn[jnode[drop]] = -1;
        for (int k = drop; k + 1 < nj; k++) jnode[k] = jnode[k + 1], jkind[k] = jkind[k + 1], jn[jnode[k]] = k;
        nj--;
    }
    /* root and DFS */
    out->njoints = nj;
    out->joints = malloc((size_t)nj * 3 * sizeof(float));
    out->parent = malloc((size_t)nj * sizeof(int32_t));
    out->joint_node = malloc((size_t)nj * sizeof(int32_t));
    out->kind = malloc((size_t)nj);
    stack = malloc((size_t)(2 * np + nj + 2) * 2 * sizeof *stack);
    if (!out->joints || !out->parent || !out->joint_node || !out->kind || !stack) goto oom;
    int root = 0;
    double best = INFINITY;
    for (int j = 0; j < nj; j++) {
        memcpy(out->joints + 3 * j, s->nodes + 3 * (int64_t)jnode[j], 3 * sizeof(float));
        out->joint_node[j] = jnode[j], out->kind[j] = jkind[j], out->parent[j] = -2;
        const float *p = out->joints + 3 * j;
        double d = 0;
        for (int k = 0; k < 3; k++) d += (p[k] - s->centroid[k]) * (p[k] - s->centroid[k]);
        if (d < best) best = d, root = j;
    }
    out->root = root;
    int64_t sp = 0;
    stack[0] = root, stack[1] = -1, sp = 1;
    while (sp > 0) {
        sp--;
        int32_t j = stack[2 * sp], par = stack[2 * sp + 1];
        if (out->parent[j] != -2) continue;
        out->parent[j] = par;
        for (int32_t q = jadj_off[j + 1] - 1; q >= jadj_off[j]; q--)
            if (out->parent[jadj[q]] == -2) stack[2 * sp] = jadj[q], stack[2 * sp + 1] = j, sp++;
    }
    /* joints the DFS did not reach (a skeleton in pieces) hang from the root, so the output is
     * one tree; the caller can see them as root children with no skeleton path */
    for (int j = 0; j < nj; j++)
        if (out->parent[j] == -2) out->parent[j] = root;
    /* 5. parts */
    {
        int *nchild = calloc((size_t)nj + 1, sizeof *nchild), *limb_len = calloc((size_t)nj + 1, sizeof *limb_len);
        double *limb_arc = calloc((size_t)nj + 1, sizeof *limb_arc);
        int *leaves = malloc((size_t)(nj + 1) * sizeof *leaves);
        if (!nchild || !limb_len || !limb_arc || !leaves) {
            free(nchild), free(limb_len), free(limb_arc), free(leaves);
            goto oom;
        }
        for (int j = 0; j < nj; j++)
            if (out->parent[j] >= 0) nchild[out->parent[j]]++;
        int nl = 0;
        for (int j = 0; j < nj; j++) {
            if (nchild[j] || j == root) continue;
            int c = j, len = 1;
            double arc = 0;
            while (out->parent[c] >= 0 && nchild[out->parent[c]] < 2 && out->parent[c] != root) {
                const float *p = out->joints + 3 * c, *q = out->joints + 3 * out->parent[c];
                arc += sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]));
                c = out->parent[c], len++;
            }
            limb_len[j] = len, limb_arc[j] = arc, leaves[nl++] = j;
        }
        /* the four limbs with most joints (then longest) */
        for (int a = 0; a < nl; a++)
            for (int b = a + 1; b < nl; b++) {
                int x = leaves[a], y = leaves[b];
                if (limb_len[y] > limb_len[x] || (limb_len[y] == limb_len[x] && limb_arc[y] > limb_arc[x]))
                    leaves[a] = y, leaves[b] = x;
            }
        int nlimb = nl < 4 ? nl : 4;
        out->nparts = nlimb + 1;
        out->part = calloc((size_t)out->nparts * nj, 1);
        if (!out->part) {
            free(nchild), free(limb_len), free(limb_arc), free(leaves);
            goto oom;
        }
        uint8_t *core = out->part + (size_t)nlimb * nj;
        memset(core, 1, (size_t)nj);
        for (int p = 0; p < nlimb; p++) {
            int c = leaves[p];
            uint8_t *pm = out->part + (size_t)p * nj;
            for (;;) {
                pm[c] = 1;
                int par = out->parent[c];
                if (par < 0) break;
                if (nchild[par] >= 2 || par == root) {
                    pm[par] = 1; /* the attachment joint, shared with the core */
                    break;
                }
                core[c] = 0;
                c = par;
            }
            core[c] = 0;
            if (out->parent[c] < 0) core[c] = 1; /* a limb that reaches the root keeps it in the core */
        }
        free(nchild), free(limb_len), free(limb_arc), free(leaves);
    }
    rc = 0;
    goto done;
oom:
    (void)base_errf(err, errlen, "joints: out of memory");
done:
    free(Wn), free(cnt), free(jn), free(ev), free(pe), free(chain), free(chain_e), free(jnode), free(jkind);
    free(arc), free(gs);
    free(dist), free(queue), free(jadj), free(jadj_off), free(stack);
    adj_free(&A);
    if (rc) sb_rig_free(out);
    return rc;
}

/* ---- the found tree against the true one ---------------------------------------------------- */

typedef struct {
    int n;          /* distinct joints */
    float *x;       /* n × 3 */
    uint8_t *adj;   /* n × n */
} JGraph;

static int jgraph_build(const float *j, const int32_t *par, int n, double eps, JGraph *g) {
    g->n = 0;
    g->x = malloc((size_t)(n + 1) * 3 * sizeof *g->x);
    int *rep = malloc((size_t)(n + 1) * sizeof *rep);
    if (!g->x || !rep) {
        free(rep);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        rep[i] = -1;
        for (int k = 0; k < g->n && rep[i] < 0; k++) {
            double d0 = j[3 * i] - g->x[3 * k], d1 = j[3 * i + 1] - g->x[3 * k + 1], d2 = j[3 * i + 2] - g->x[3 * k + 2];
            if (d0 * d0 + d1 * d1 + d2 * d2 < eps * eps) rep[i] = k;
        }
        if (rep[i] < 0) memcpy(g->x + 3 * g->n, j + 3 * i, 3 * sizeof(float)), rep[i] = g->n++;
    }
    g->adj = calloc((size_t)g->n * g->n + 1, 1);
    if (!g->adj) {
        free(rep);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (par[i] < 0 || par[i] >= n) continue;
        int a = rep[i], b = rep[par[i]];
        if (a != b) g->adj[a * g->n + b] = g->adj[b * g->n + a] = 1;
    }
    free(rep);
    return 0;
}

static void jgraph_degrees(const JGraph *g, int *ends, int *branches) {
    *ends = *branches = 0;
    for (int a = 0; a < g->n; a++) {
        int d = 0;
        for (int b = 0; b < g->n; b++) d += g->adj[a * g->n + b];
        *ends += d == 1, *branches += d >= 3;
    }
}

int sb_tree_compare(const float *tj, const int32_t *tpar, int nt, const float *fj, const int32_t *fpar, int nf,
                    double diag, double radius_rel, SbTreeCompare *out) {
    memset(out, 0, sizeof *out);
    JGraph T = {0}, F = {0};
    int rc = -1;
    int *mt = NULL, *mf = NULL, *prev = NULL, *queue = NULL;
    if (jgraph_build(tj, tpar, nt, 1e-4 * diag, &T) || jgraph_build(fj, fpar, nf, 1e-4 * diag, &F)) goto done;
    mt = malloc((size_t)(T.n + 1) * sizeof *mt), mf = malloc((size_t)(F.n + 1) * sizeof *mf);
    prev = malloc((size_t)(F.n + 1) * sizeof *prev), queue = malloc((size_t)(F.n + 1) * sizeof *queue);
    if (!mt || !mf || !prev || !queue) goto done;
    for (int a = 0; a < T.n; a++) mt[a] = -1;
    for (int b = 0; b < F.n; b++) mf[b] = -1;
    /* greedy matching, nearest pair first (a few dozen joints: quadratic passes are fine) */
    double r2 = radius_rel * diag * radius_rel * diag;
    for (;;) {
        int ba = -1, bb = -1;
        double best = r2;
        for (int a = 0; a < T.n; a++) {
            if (mt[a] >= 0) continue;
            for (int b = 0; b < F.n; b++) {
                if (mf[b] >= 0) continue;
                double d0 = T.x[3 * a] - F.x[3 * b], d1 = T.x[3 * a + 1] - F.x[3 * b + 1], d2 = T.x[3 * a + 2] - F.x[3 * b + 2];
                double d = d0 * d0 + d1 * d1 + d2 * d2;
                if (d < best) best = d, ba = a, bb = b;
            }
        }
        if (ba < 0) break;
        mt[ba] = bb, mf[bb] = ba, out->matched++;
    }
    /* true edges between matched joints, and whether the found tree joins their partners
     * directly (a breadth-first search that does not pass through other matched joints) */
    for (int a = 0; a < T.n; a++)
        for (int c = a + 1; c < T.n; c++) {
            if (!T.adj[a * T.n + c] || mt[a] < 0 || mt[c] < 0) continue;
            out->edges++;
            int src = mt[a], dst = mt[c], qh = 0, qt = 0;
            for (int b = 0; b < F.n; b++) prev[b] = -2;
            prev[src] = -1, queue[qt++] = src;
            while (qh < qt && prev[dst] == -2) {
                int u = queue[qh++];
                if (u != src && mf[u] >= 0) continue; /* another matched joint: the path stops here */
                for (int v = 0; v < F.n; v++)
                    if (F.adj[u * F.n + v] && prev[v] == -2) prev[v] = u, queue[qt++] = v;
            }
            out->kept += prev[dst] != -2;
        }
    out->true_joints = T.n, out->found_joints = F.n;
    jgraph_degrees(&T, &out->true_ends, &out->true_branches);
    jgraph_degrees(&F, &out->found_ends, &out->found_branches);
    rc = 0;
done:
    free(T.x), free(T.adj), free(F.x), free(F.adj), free(mt), free(mf), free(prev), free(queue);
    return rc;
}
