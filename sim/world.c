/* sim/world.c — the coupled multi-object step with IPC contact (see world.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sort.h"
#include "base/clock.h"
#include "base/par.h"
#include "base/log.h"
#include "base/mat3.h"
#include "sim/contact.h"
#include "sim/dense.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/newton.h"
#include "sim/proxy.h"
#include "sim/world.h"

/* IPC's ceiling on the adaptive barrier stiffness: 100 × its initial value (Li et al. 2020) */
#define KAPPA_MAX_RATIO 100
/* the Newton matrix's first Cholesky shift on a failure, relative to its mean diagonal (dense.h) */
#define CHOL_SHIFT 1e-14

/* doubles per active pair in ageo (see SimWorldScratch) */
#define GEO 10

/* per-object layout and scratch */
typedef struct {
    int64_t nb, n, r, m;       /* blocks, 3nb, subspace dim per coordinate, 3r */
    int64_t off, roff;         /* offsets in Z and in the reduced vector */
    int64_t hoff;              /* offset of its block in Hob */
    const double *N, *zp, *Lm; /* exact-Dirichlet subspace (N NULL: none) */
    int64_t np;                /* contact points */
    const double *Xp, *Bp;
    double *Bpr;               /* np × r: the rows b_pᵀ N in the reduced coordinates (NULL: Bp) */
    int64_t nf;                /* the contact surface over the points: the proxy's, or the mesh's */
    const int32_t *faces;
    SimProxy proxy;            /* np 0: none (the render mesh, or the cubature points, are the points) */
    const int32_t *pvert;      /* the proxy's mesh vertex per point (NULL: point q is vertex q) */
    double *Xown, *Bown;       /* the proxy's rows of Xv and Bv */
} ObjInfo;

struct SimWorldScratch {
    ObjInfo *oi;
    int nobj;
    int64_t ntot, nred, maxn;
    double *z0, *z, *ztil, *g, *gt, *dz, *zt, *Hk, *Hr, *gr, *dy, *Lh, *sub, *tmp;
    double **x, **dx;          /* per body (deformables, then rigid bodies): positions, step */
    SimContactBody *bodies;
    SimContactSet cand;        /* broad-phase candidates of the current step */
    SimContactPair *act;       /* pairs within d̂ at the current iterate */
    double *ageo;              /* per active pair (GEO apart): r (3), d, side b's weights (3), side
                                  a's (2), the mollifier m (1 but for nearly parallel edge pairs) */
    int32_t *aidx;             /* per active pair (5 apart): side b's points (3), side a's (2), −1 unused */
    int32_t **edges;           /* per body: its surface edges (sim_mesh_edges), NULL without faces */
    int64_t *nedges;
    int32_t **euses, **fedges, **vcoef; /* per body: the deduplication's tables (contact.h), or NULL */
    double **elen2;            /* per body: the edges' squared lengths at init (the mollifier's ε_x) */
    /* lagged friction (IPC §5): the pairs within d̂ at the step's start, fixed over the step, each
     * with its stencil (GEO apart as ageo: r₀ (3), μ λ, side b's weights (3), side a's (2), −),
     * points (5 as aidx) and tangent basis (6: two unit vectors ⊥ the normal). They follow the
     * barrier pairs in act (act[nact ..]) so the Hessian's assembly and products take them too. */
    int64_t nfr, fr_cap;
    SimContactPair *fr;
    double *frgeo, *frT;
    int32_t *fridx;
    double fr_eps;             /* ε_v dt: the displacement below which friction is smoothed (m) */
    int64_t nact, act_cap;
    double *U;                 /* contact Hessian scratch */
    int *comp;                 /* component of each object */
    bool *hr_dirty;            /* nobj × nobj: Hr's off-diagonal object blocks written since they were
                                  last zeroed (hr_from_objects) */
    /* Newton directions by conjugate gradients on the exact Hessian, preconditioned by a
     * factorization of the PSD one (see sim_world_step) */
    double *Hob;               /* each object's reduced diagonal block (m × m), without contact */
    double *cg;                /* 5 vectors of nred: x, r, z, p, q */
    int64_t rmax;              /* the largest subspace dimension per coordinate */
    double *Ug;                /* per active pair: its two reduced rows, rmax apart */
    double *cfx;               /* per active pair: the six coefficients of its exact 3 × 3 Hessian */
    int64_t pair_cap;
    bool have_factor;          /* Lh holds the factors of a PSD Newton matrix over comp */
    /* without contact (direct_direction): each object's factor in Lh at hoff, of the block kept
     * in Hf (valid when hf_ok) */
    double *Hf;
    bool *hf_ok;
    bool kel_stale;            /* the objects' lagged elastic Hessians want reassembly (solver.h) */
    double **xr;               /* per object: a rigged one's contact points at the last step's end
                                  (rig_sweep), NULL before its first step or without a rig */
    double dmin_prev;          /* the smallest pair distance at the last step's start (adaptive κ) */
    double sweep_len;          /* this step's longest Newton move of a contact point (ws_step_bound) */
};

static void scratch_free(struct SimWorldScratch *s, int nbodies) {
    if (!s) return;
    if (s->oi)
        for (int k = 0; k < s->nobj; k++) free(s->oi[k].Bpr), free(s->oi[k].Xown), free(s->oi[k].Bown), sim_proxy_free(&s->oi[k].proxy);
    free(s->oi), free(s->z0), free(s->z), free(s->ztil), free(s->g), free(s->gt), free(s->dz), free(s->zt), free(s->Hk);
    free(s->Hr), free(s->gr), free(s->dy), free(s->Lh), free(s->sub), free(s->tmp);
    if (s->x)
        for (int b = 0; b < nbodies; b++) free(s->x[b]), free(s->dx[b]);
    free(s->x), free(s->dx), free(s->bodies), free(s->act), free(s->ageo), free(s->aidx), free(s->U), free(s->comp);
    free(s->Hob), free(s->cg), free(s->Ug), free(s->cfx), free(s->Hf), free(s->hf_ok), free(s->hr_dirty);
    if (s->edges)
        for (int b = 0; b < nbodies; b++) free(s->edges[b]), free(s->elen2[b]);
    if (s->euses)
        for (int b = 0; b < nbodies; b++) free(s->euses[b]), free(s->fedges[b]), free(s->vcoef[b]);
    free(s->edges), free(s->nedges), free(s->elen2), free(s->euses), free(s->fedges), free(s->vcoef);
    free(s->fr), free(s->frgeo), free(s->frT), free(s->fridx);
    if (s->xr)
        for (int k = 0; k < s->nobj; k++) free(s->xr[k]);
    free(s->xr);
    sim_contact_set_free(&s->cand);
    free(s);
}

void sim_world_free(SimWorld *w) {
    scratch_free(w->ws, w->nobj + w->nrigid);
    free(w->planes);
    memset(w, 0, sizeof *w);
}

/* median nearest-neighbour spacing of up to 256 sampled points */
static double nn_spacing(int64_t np, const double *x) {
    if (np < 2) return 0;
    int64_t ns = np < 256 ? np : 256;
    double *d = malloc(sizeof(double) * (size_t)ns);
    if (!d) return 0;
    for (int64_t s = 0; s < ns; s++) {
        int64_t p = s * np / ns;
        double best = INFINITY;
        for (int64_t q = 0; q < np; q++) {
            if (q == p) continue;
            double r = 0;
            for (int i = 0; i < 3; i++) r += (x[3 * p + i] - x[3 * q + i]) * (x[3 * p + i] - x[3 * q + i]);
            if (r > 0 && r < best) best = r;
        }
        d[s] = sqrt(best);
    }
    qsort(d, (size_t)ns, sizeof *d, base_cmp_double);
    double m = d[ns / 2];
    free(d);
    return m;
}

/* D = R Vᵀ (n × 3) for the rows R (n × m) and V's three coordinate blocks (3 × m, row-major):
 * plain loops, as BLAS would pack R for so skinny a product; D += when accumulate */
static void rows_times_coords(int64_t n, int64_t m, const double *R, const double *V, double *D, bool accumulate) {
    const double *v0 = V, *v1 = V + m, *v2 = V + 2 * m;
    for (int64_t p = 0; p < n; p++) {
        const double *u = R + p * m;
        double d0 = 0, d1 = 0, d2 = 0;
#pragma omp simd reduction(+ : d0, d1, d2)
        for (int64_t j = 0; j < m; j++) d0 += u[j] * v0[j], d1 += u[j] * v1[j], d2 += u[j] * v2[j];
        double *d = D + 3 * p;
        if (accumulate) d[0] += d0, d[1] += d1, d[2] += d2;
        else d[0] = d0, d[1] = d1, d[2] = d2;
    }
}

/* x = Xp + u_r + Bp z per coordinate (np × 3). u_r: a rigged object's rig displacement at its
 * contact points (sim/rig.h: x = X + u_r + B z), the pose sim_rig_advance set for the step's end;
 * the rig is prescribed input, so its own move is swept apart, before the step (rig_sweep). */
static void obj_points(const SimObject *o, const ObjInfo *oi, const double *z, double *x) {
    memcpy(x, oi->Xp, sizeof(double) * 3 * (size_t)oi->np);
    const double *ur = o->nv ? o->rig_uv : o->rig_uc; /* indexed as Xv / Xc, as the planes read it */
    for (int64_t q = 0; ur && q < oi->np; q++) {
        const double *u = ur + 3 * (oi->pvert ? oi->pvert[q] : q);
        x[3 * q] += u[0], x[3 * q + 1] += u[1], x[3 * q + 2] += u[2];
    }
    rows_times_coords(oi->np, oi->nb, oi->Bp, z, x, true);
}

static void obj_disp(const ObjInfo *oi, const double *dz, double *dx) {
    rows_times_coords(oi->np, oi->nb, oi->Bp, dz, dx, false);
}

/* The automatic barrier stiffness (docs/contact.md, "The barrier stiffness κ"). With the
 * deduplicated constraint set every contact point meets a flat support once, so a body b of
 * weight W_b = M_b |g_b| resting in its initial orientation on a flat support, its lowest contact
 * point at the gap d₀ = d̂/2, is held by Σ_i κ (−b′(d₀ + h_i)) over its contact points at heights
 * h_i < d̂/2 above the lowest one along g_b (those farther contribute little and lie beyond d̂ at
 * any gap ≥ d̂/2). κ_b = W_b / that sum puts b's equilibrium gap at d̂/2 whatever its mass and its
 * number of points; κ is the largest κ_b, so no body sinks below d̂/2 in its rest orientation
 * (a lighter one rests higher in the band). Resting on a vertex, an edge or a curved patch has
 * fewer points in reach than the rest orientation's face: the adaptive increase (world_step)
 * covers those. Bodies without weight (no gravity, or the immovable supports of the tests) do not
 * count; a world where none has any keeps the earlier rule for scale: the heaviest mass at
 * |g| ≥ 9.81 on 24 pairs at d̂/2. */
static double support_kappa(const SimWorld *w, double heavy, double gmax) {
    const struct SimWorldScratch *s = w->ws;
    double d0 = 0.5 * w->dhat, kappa = 0;
    for (int b = 0; b < w->nobj + w->nrigid; b++) {
        const double *g = b < w->nobj ? w->obj[b].gravity : w->rigid[b - w->nobj].gravity;
        double M = b < w->nobj ? w->obj[b].mass : w->rigid[b - w->nobj].mass, gn = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
        int64_t np = b < w->nobj ? s->oi[b].np : w->rigid[b - w->nobj].nv;
        if (!(gn > 0) || !(M > 0) || np < 1) continue;
        const double *x = s->x[b];
        double low = INFINITY, sum = 0;
        for (int64_t i = 0; i < np; i++) low = fmin(low, (x[3 * i] * g[0] + x[3 * i + 1] * g[1] + x[3 * i + 2] * g[2]) / -gn);
        for (int64_t i = 0; i < np; i++) {
            double h = (x[3 * i] * g[0] + x[3 * i + 1] * g[1] + x[3 * i + 2] * g[2]) / -gn - low, db;
            if (h >= d0) continue;
            sim_barrier(d0 + h, w->dhat, &db, NULL);
            sum -= db;
        }
        if (sum > 0) kappa = fmax(kappa, M * gn / sum);
    }
    /* −b′(d̂/2) = d̂ (1 + 2 ln 2) / 2 ≈ 1.19 d̂ */
    return kappa > 0 ? kappa : heavy * gmax / (24 * w->dhat);
}

int sim_world_init(SimWorld *w, SimObject *objs, int nobj, SimRigid *rigids, int nrigid, const SimPlane *planes,
                   int nplanes, const SimContactOptions *c, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    w->nobj = nobj, w->nrigid = nrigid, w->obj = objs, w->rigid = rigids, w->nplanes = nplanes;
    if (c) w->contact = *c;
    else sim_contact_defaults(&w->contact);
    if (!(w->contact.min_sep > 0 && w->contact.min_sep < 1)) {
        base_errf(err, errlen, "contact: min_sep must be in (0, 1) (got %g)", w->contact.min_sep);
        return -1;
    }
    for (int k = 0; k < nobj + nrigid; k++) {
        int m = k < nobj ? objs[k].contact_material : rigids[k - nobj].contact_material;
        if (!sim_contact_material_ok(m)) {
            base_errf(err, errlen, "contact: %s %d's contact material %d is not in [0, %d)", k < nobj ? "object" : "rigid body",
                      k < nobj ? k : k - nobj, m, SIM_CONTACT_MATERIALS);
            return -1;
        }
        for (int p = 0; k < nobj && p < objs[k].nplanes; p++)
            if (!sim_contact_material_ok(objs[k].planes[p].material)) {
                base_errf(err, errlen, "contact: object %d's plane %d has contact material %d, not in [0, %d)", k, p,
                          objs[k].planes[p].material, SIM_CONTACT_MATERIALS);
                return -1;
            }
    }
    w->planes = malloc(sizeof(SimPlane) * (size_t)(nplanes + 1));
    struct SimWorldScratch *s = w->ws = calloc(1, sizeof *s);
    int nbodies = nobj + nrigid;
    if (!w->planes || !s) goto oom;
    /* normalized planes, as sim_object_add_plane stores them */
    for (int p = 0; p < nplanes; p++) {
        SimPlane q = planes[p];
        double l = sqrt(q.normal[0] * q.normal[0] + q.normal[1] * q.normal[1] + q.normal[2] * q.normal[2]);
        if (!(l > 0)) {
            base_errf(err, errlen, "planes[%d]: zero normal", p);
            return -1;
        }
        for (int i = 0; i < 3; i++) q.normal[i] /= l;
        q.offset /= l;
        w->planes[p] = q;
    }
    s->oi = calloc((size_t)(nobj + 1), sizeof *s->oi);
    s->x = calloc((size_t)(nbodies + 1), sizeof(double *));
    s->dx = calloc((size_t)(nbodies + 1), sizeof(double *));
    s->bodies = calloc((size_t)(nbodies + 1), sizeof *s->bodies);
    s->comp = calloc((size_t)(nobj + 1), sizeof(int));
    s->edges = calloc((size_t)(nbodies + 1), sizeof(int32_t *));
    s->nedges = calloc((size_t)(nbodies + 1), sizeof(int64_t));
    s->elen2 = calloc((size_t)(nbodies + 1), sizeof(double *));
    s->euses = calloc((size_t)(nbodies + 1), sizeof(int32_t *));
    s->fedges = calloc((size_t)(nbodies + 1), sizeof(int32_t *));
    s->vcoef = calloc((size_t)(nbodies + 1), sizeof(int32_t *));
    if (!s->oi || !s->x || !s->dx || !s->bodies || !s->comp || !s->edges || !s->nedges || !s->elen2 || !s->euses ||
        !s->fedges || !s->vcoef)
        goto oom;
    int64_t off = 0, roff = 0, maxn = 1, hoff = 0, rmax = 1;
    double spacing = 0, heavy = 0, gmax = 9.81;
    /* a body alone has no pairs (sim_object_step's world of one): no reduced contact rows, no
     * spacing for d̂ (O(256 np) a body, as much as several steps) */
    const bool pairs = nbodies > 1;
    for (int k = 0; k < nobj; k++) {
        SimObject *o = &objs[k];
        if (!o->prep && sim_object_prepare(o, err, errlen)) return -1;
        ObjInfo *oi = &s->oi[k];
        oi->nb = o->nb, oi->n = o->n;
        oi->r = sim_object_subspace(o, &oi->N, &oi->zp, &oi->Lm);
        oi->m = 3 * oi->r;
        oi->off = off, oi->roff = roff, oi->hoff = hoff;
        off += oi->n, roff += oi->m, hoff += oi->m * oi->m;
        if (oi->n > maxn) maxn = oi->n;
        oi->np = o->nv ? o->nv : o->nc;
        oi->Xp = o->nv ? o->Xv : o->Xc;
        oi->Bp = o->nv ? o->Bv : o->Bc;
        if (o->nv && o->faces) oi->nf = o->nf, oi->faces = o->faces;
        if (oi->r > rmax) rmax = oi->r;
        s->nobj = k + 1;
        /* d̂ from the render mesh's spacing (as without a proxy: the gap objects rest at stays the
         * mesh's scale, not the proxy's cells) */
        if (pairs) spacing = fmax(spacing, nn_spacing(oi->np, oi->Xp));
        if (pairs && w->contact.proxy_cells > 0 && oi->nf) {
            double h = fmax(o->diag / w->contact.proxy_cells, w->contact.dhat);
            if (sim_proxy_build(o->nv, o->Xv, o->nf, o->faces, h, &oi->proxy)) goto oom;
            const SimProxy *px = &oi->proxy;
            oi->Xown = malloc(sizeof(double) * 3 * (size_t)px->np), oi->Bown = malloc(sizeof(double) * (size_t)(px->np * o->nb));
            if (!oi->Xown || !oi->Bown) goto oom;
            for (int64_t v = 0; v < px->np; v++) {
                memcpy(oi->Xown + 3 * v, o->Xv + 3 * px->vert[v], sizeof(double) * 3);
                memcpy(oi->Bown + v * o->nb, o->Bv + px->vert[v] * o->nb, sizeof(double) * (size_t)o->nb);
            }
            oi->np = px->np, oi->Xp = oi->Xown, oi->Bp = oi->Bown, oi->nf = px->nf, oi->faces = px->faces;
            oi->pvert = px->vert;
        }
        if (oi->N && pairs) {
            oi->Bpr = malloc(sizeof(double) * (size_t)(oi->np * oi->r));
            if (!oi->Bpr) goto oom;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)oi->np, (int)oi->r, (int)oi->nb, 1.0, oi->Bp, (int)oi->nb,
                        oi->N, (int)oi->r, 0.0, oi->Bpr, (int)oi->r);
        }
        s->x[k] = malloc(sizeof(double) * 3 * (size_t)(oi->np + 1));
        s->dx[k] = malloc(sizeof(double) * 3 * (size_t)(oi->np + 1));
        if (!s->x[k] || !s->dx[k]) goto oom;
        obj_points(o, oi, o->z, s->x[k]);
        heavy = fmax(heavy, o->mass);
        gmax = fmax(gmax, sqrt(o->gravity[0] * o->gravity[0] + o->gravity[1] * o->gravity[1] + o->gravity[2] * o->gravity[2]));
    }
    for (int r = 0; r < nrigid; r++) {
        SimRigid *rb = &rigids[r];
        s->x[nobj + r] = malloc(sizeof(double) * 3 * (size_t)(rb->nv + 1));
        s->dx[nobj + r] = malloc(sizeof(double) * 3 * (size_t)(rb->nv + 1));
        if (!s->x[nobj + r] || !s->dx[nobj + r]) goto oom;
        sim_rigid_vertices(rb, s->x[nobj + r]);
        if (pairs) spacing = fmax(spacing, nn_spacing(rb->nv, s->x[nobj + r]));
        heavy = fmax(heavy, rb->mass);
    }
    /* each surface's edges for the edge–edge pairs, and their squared lengths now (the rest
     * shape, posed: ε_x of the mollifier); the deduplication's adjacency (contact.h) */
    for (int b = 0; b < nbodies && pairs && (w->contact.edge_edge || w->contact.dedup); b++) {
        int64_t nf = b < nobj ? s->oi[b].nf : rigids[b - nobj].nf, npb = b < nobj ? s->oi[b].np : rigids[b - nobj].nv;
        const int32_t *faces = b < nobj ? s->oi[b].faces : rigids[b - nobj].faces;
        if (!nf || !faces) continue;
        if (sim_mesh_edge_uses(nf, faces, &s->nedges[b], &s->edges[b], &s->euses[b])) goto oom;
        if (w->contact.dedup &&
            sim_mesh_dedup_tables(npb, nf, faces, s->nedges[b], s->edges[b], s->euses[b], &s->fedges[b], &s->vcoef[b]))
            goto oom;
        s->elen2[b] = malloc(sizeof(double) * (size_t)(s->nedges[b] + 1));
        if (!s->elen2[b]) goto oom;
        for (int64_t e = 0; e < s->nedges[b]; e++) {
            const double *x0 = s->x[b] + 3 * s->edges[b][2 * e], *x1 = s->x[b] + 3 * s->edges[b][2 * e + 1];
            s->elen2[b][e] = (x1[0] - x0[0]) * (x1[0] - x0[0]) + (x1[1] - x0[1]) * (x1[1] - x0[1]) + (x1[2] - x0[2]) * (x1[2] - x0[2]);
        }
    }
    s->ntot = off, s->nred = roff, s->maxn = maxn;
    size_t n = (size_t)off + 1, nr = (size_t)roff + 1;
    s->z0 = malloc(sizeof(double) * n), s->z = malloc(sizeof(double) * n), s->ztil = malloc(sizeof(double) * n);
    s->g = malloc(sizeof(double) * n), s->gt = malloc(sizeof(double) * n), s->dz = malloc(sizeof(double) * n), s->zt = malloc(sizeof(double) * n);
    s->Hk = malloc(sizeof(double) * (size_t)(maxn * maxn));
    s->Hr = calloc(nr * nr, sizeof(double)), s->gr = malloc(sizeof(double) * nr), s->dy = malloc(sizeof(double) * nr);
    s->Lh = malloc(sizeof(double) * nr * nr), s->sub = malloc(sizeof(double) * nr * nr);
    s->tmp = malloc(sizeof(double) * (size_t)(maxn * maxn + 3 * maxn + roff + 1));
    if (!s->z0 || !s->z || !s->ztil || !s->g || !s->gt || !s->dz || !s->zt || !s->Hk || !s->Hr || !s->gr || !s->dy ||
        !s->Lh || !s->sub || !s->tmp)
        goto oom;
    s->Hob = malloc(sizeof(double) * (size_t)(hoff + 1)), s->cg = malloc(sizeof(double) * 5 * nr);
    s->Hf = malloc(sizeof(double) * (size_t)(hoff + 1)), s->hf_ok = calloc((size_t)nobj + 1, sizeof(bool));
    s->hr_dirty = calloc((size_t)(nobj * nobj) + 1, sizeof(bool));
    s->rmax = rmax;
    if (!s->Hob || !s->cg || !s->Hf || !s->hf_ok || !s->hr_dirty) goto oom;
    w->dhat = w->contact.dhat > 0 ? w->contact.dhat : 1.5 * spacing;
    if (!(w->dhat > 0)) w->dhat = 1e-2;
    w->kappa = w->contact.stiffness > 0 ? w->contact.stiffness : pairs ? support_kappa(w, heavy, gmax) : 1;
    w->kappa_max = w->contact.stiffness > 0 ? w->kappa : KAPPA_MAX_RATIO * w->kappa;
    s->dmin_prev = INFINITY;
    return 0;
oom:
    base_errf(err, errlen, "sim world: out of memory");
    return -1;
}

/* the contact points' rows in the reduced coordinates (np × r) */
static const double *obj_rows(const ObjInfo *oi) { return oi->Bpr ? oi->Bpr : oi->Bp; }

/* ---- contact energy, gradient, Hessian over a pair list --------------------------------------- */

static void pair_geom(const struct SimWorldScratch *s, const SimContactPair *q, double alpha, double r[3], double *d) {
    *d = sim_contact_pair_vector(s->bodies, q, alpha, r, NULL, NULL);
}

/* a pair's factor on its barrier: its dedup weight (contact.h) times an edge pair's mollifier at α */
static double pair_factor(const struct SimWorldScratch *s, const SimContactPair *q, double alpha) {
    return sim_contact_pair_weight(s->bodies, q) * sim_contact_pair_mollifier(s->bodies, q, alpha);
}

/* Σ w m b over the pairs at α (bodies' x + α dx), without κ; *dmin: the smallest pair distance */
static double barrier_sum(const SimWorld *w, const SimContactPair *pairs, int64_t np, double alpha, double *dmin) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0, m = INFINITY;
    for (int64_t k = 0; k < np; k++) {
        double r[3], d;
        pair_geom(s, &pairs[k], alpha, r, &d);
        m = fmin(m, d);
        if (d < w->dhat) E += pair_factor(s, &pairs[k], alpha) * sim_barrier(d, w->dhat, NULL, NULL);
    }
    if (dmin) *dmin = m;
    return E;
}

/* κ Σ w m b over the pairs at α */
static double barrier_energy(const SimWorld *w, const SimContactPair *pairs, int64_t np, double alpha, double *dmin) {
    return w->kappa * barrier_sum(w, pairs, np, alpha, dmin);
}

/* the same over the active pairs at the bodies' x, from the distances and factors collect_active
 * stored (the same values barrier_energy would compute again, in the same order) */
static double active_energy(const SimWorld *w) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0;
    for (int64_t t = 0; t < s->nact; t++) {
        const double *ge = s->ageo + GEO * t;
        E += ge[9] * sim_barrier(ge[3], w->dhat, NULL, NULL);
    }
    return w->kappa * E;
}

/* room for need pairs in the active store (its three parallel arrays grow together, at least
 * doubling); 0, or -1 when out of memory (the arrays that did grow are kept) */
static int act_reserve(struct SimWorldScratch *s, int64_t need) {
    if (need <= s->act_cap) return 0;
    int64_t cap = s->act_cap ? 2 * s->act_cap : 256;
    if (cap < need) cap = need + 256;
    SimContactPair *a = realloc(s->act, sizeof *a * (size_t)cap);
    if (a) s->act = a;
    double *g = realloc(s->ageo, sizeof(double) * GEO * (size_t)cap);
    if (g) s->ageo = g;
    int32_t *ix = realloc(s->aidx, sizeof(int32_t) * 5 * (size_t)cap);
    if (ix) s->aidx = ix;
    if (!a || !g || !ix) return -1;
    s->act_cap = cap;
    return 0;
}

/* the pairs of the candidate set within d̂ at α = 0 (bodies' x) become the active set, each with
 * its stencil; *dmin (when given): the smallest distance over all candidates (one pass for both) */
static int collect_active(SimWorld *w, double *dmin) {
    struct SimWorldScratch *s = w->ws;
    double m = INFINITY;
    s->nact = 0;
    for (int64_t k = 0; k < s->cand.n; k++) {
        if (act_reserve(s, s->nact + 1)) return -1;
        double *ge = s->ageo + GEO * s->nact;
        int32_t *ix = s->aidx + 5 * s->nact;
        double d = sim_contact_pair_stencil(s->bodies, &s->cand.pairs[k], 0, ge, ge + 7, ix + 3, ge + 4, ix);
        m = fmin(m, d);
        if (d >= w->dhat) continue;
        ge[3] = d, ge[9] = pair_factor(s, &s->cand.pairs[k], 0);
        s->act[s->nact++] = s->cand.pairs[k];
    }
    if (dmin) *dmin = m;
    /* the step's friction pairs after them, with their lagged stencils */
    if (act_reserve(s, s->nact + s->nfr)) return -1;
    if (s->nfr) {
        memcpy(s->act + s->nact, s->fr, sizeof *s->fr * (size_t)s->nfr);
        memcpy(s->ageo + GEO * s->nact, s->frgeo, sizeof(double) * GEO * (size_t)s->nfr);
        memcpy(s->aidx + 5 * s->nact, s->fridx, sizeof(int32_t) * 5 * (size_t)s->nfr);
    }
    return 0;
}

/* an active pair's row on one side: the weighted sum of its points (side 0: the point, or the
 * edge's ends at the closest point's parameter; side 1: a point, the triangle's corners at the
 * closest point's weights, or the edge's ends); reduced: the rows in the reduced coordinates (r
 * long), else the full ones (nb long) */
static void pair_row(const SimWorld *w, int64_t t, int side, bool reduced, double *row) {
    const struct SimWorldScratch *s = w->ws;
    const SimContactPair *q = &s->act[t];
    const ObjInfo *oi = &s->oi[side ? q->b : q->a];
    const double *R = reduced ? obj_rows(oi) : oi->Bp;
    int64_t len = reduced ? oi->r : oi->nb;
    if (!side && q->f != SIM_PAIR_EE) {
        memcpy(row, R + q->p * len, sizeof(double) * (size_t)len);
        return;
    }
    const double *wt = s->ageo + GEO * t + (side ? 4 : 7);
    const int32_t *ix = s->aidx + 5 * t + (side ? 0 : 3);
    memset(row, 0, sizeof(double) * (size_t)len);
    for (int k = 0; k < (side ? 3 : 2); k++)
        if (ix[k] >= 0 && wt[k] != 0) cblas_daxpy((int)len, wt[k], R + ix[k] * len, 1, row, 1);
}

/* adds c (3) times the full row of point p of deformable `body` to g */
static void add_point_force(const SimWorld *w, int body, int32_t p, const double c[3], double *g) {
    const ObjInfo *oi = &w->ws->oi[body];
    for (int i = 0; i < 3; i++) cblas_daxpy((int)oi->nb, c[i], oi->Bp + p * oi->nb, 1, g + oi->off + i * oi->nb, 1);
}

/* an edge pair's mollifier gradient: ∂m/∂x for its four points (side a's ends, side b's) */
static void mollifier_gradient(const SimWorld *w, const SimContactPair *q, double dm[4][3]) {
    const struct SimWorldScratch *s = w->ws;
    const int32_t *ea = s->edges[q->a] + 2 * q->p, *eb = s->edges[q->b] + 2 * q->q;
    const double *xa = s->x[q->a], *xb = s->x[q->b];
    double e0[3], e1[3];
    for (int i = 0; i < 3; i++) e0[i] = xa[3 * ea[1] + i] - xa[3 * ea[0] + i], e1[i] = xb[3 * eb[1] + i] - xb[3 * eb[0] + i];
    sim_ee_mollifier(e0, e1, 1e-3 * s->elen2[q->a][q->p] * s->elen2[q->b][q->q], dm[1], dm[3]);
    for (int i = 0; i < 3; i++) dm[0][i] = -dm[1][i], dm[2][i] = -dm[3][i];
}

/* scale · ∇(κ Σ m b) over the active pairs added to g (Z-sized): κ m b′ r/d on side a's points
 * (times their weights), −w_j that on side b's, and κ b ∂m/∂x for the edge pairs with m < 1 */
static void barrier_gradient(const SimWorld *w, double scale, double *g) {
    const struct SimWorldScratch *s = w->ws;
    double *row = s->tmp;
    for (int64_t t = 0; t < s->nact; t++) {
        const SimContactPair *q = &s->act[t];
        const double *r = s->ageo + GEO * t, d = r[3], m = r[9];
        double db, b = sim_barrier(d, w->dhat, &db, NULL);
        double f = scale * w->kappa * m * db / d;
        if (q->f == SIM_PAIR_EE && m < 1) {
            double dm[4][3];
            mollifier_gradient(w, q, dm);
            const int32_t *ea = s->edges[q->a] + 2 * q->p, *eb = s->edges[q->b] + 2 * q->q;
            for (int k = 0; k < 4; k++) {
                int body = k < 2 ? q->a : q->b;
                if (body >= w->nobj) continue;
                double c[3] = {scale * w->kappa * b * dm[k][0], scale * w->kappa * b * dm[k][1], scale * w->kappa * b * dm[k][2]};
                add_point_force(w, body, k < 2 ? ea[k] : eb[k - 2], c, g);
            }
        }
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *oi = &s->oi[body];
            pair_row(w, t, side, false, row);
            double sg = side ? -f : f;
            for (int i = 0; i < 3; i++) cblas_daxpy((int)oi->nb, sg * r[i], row, 1, g + oi->off + i * oi->nb, 1);
        }
    }
}

/* the six (i ≤ i') coordinate pairs of a symmetric 3 × 3 block; z is grouped by coordinate
 * (solver.h), so a pair's 3 × 3 coefficient C enters the (i, i') coordinate blocks as C_ii' */
static const int PI_[6] = {0, 0, 0, 1, 1, 2}, PJ_[6] = {0, 1, 2, 1, 2, 2};

/* The six coefficients (e = (i ≤ i')) of active pair t's 3 × 3 Hessian block C, scaled:
 * κ m (b″ n nᵀ + (b′/d) P) with n = r/d and P the tangential curvature of the distance to the
 * closest feature, the other side held at that feature: I − n nᵀ for a point (a point pair, or a
 * triangle's corner, or two edges' ends), I − n nᵀ − e eᵀ for an edge's interior (direction e)
 * against a point, 0 for a face or two edges' interiors (the distance between the lines is flat
 * along both). An edge pair's mollifier m is held fixed (its derivatives enter the gradient, not
 * this Hessian: it is below 1 only for nearly parallel edges, where the ends' point–triangle
 * pairs carry the contact; sim_ee_barrier has the exact pair Hessian). With
 * tangential false, P = 0: the per-pair PSD projection (b′ < 0 inside d̂). The exact one
 * converges quadratically where the projected one crawls (resting contact: full Newton steps
 * shrinking the decrement by only 0.5–0.75 each); the projected one always factors. The step
 * factors the projected one and solves with the exact one by CG (below). */
static void friction_coefficients(const SimWorld *w, double scale, int64_t f, bool tangential, double cf[6]);

static void pair_coefficients(const SimWorld *w, double scale, int64_t t, bool tangential, double cf[6]) {
    const struct SimWorldScratch *s = w->ws;
    if (t >= s->nact) { /* a friction pair (they follow the barrier's in act) */
        friction_coefficients(w, scale, t - s->nact, tangential, cf);
        return;
    }
    const double *r = s->ageo + GEO * t, d = r[3], *wt = r + 4, *ua = r + 7, m = r[9];
    if (!tangential && m < 0) { /* a dedup term subtracting: nothing of it in the PSD matrix */
        memset(cf, 0, sizeof(double) * 6);
        return;
    }
    const int32_t *ib = s->aidx + 5 * t, *ia = ib + 3;
    double c = scale * w->kappa * m * sim_barrier_pair_curvature(d, w->dhat) / (d * d), tg = 0, e[3] = {0, 0, 0};
    int nz = 0, k0 = -1, k1 = -1, na = (ia[0] >= 0 && ua[0] > 0) + (ia[1] >= 0 && ua[1] > 0);
    for (int k = 0; k < 3; k++)
        if (ib[k] >= 0 && wt[k] > 0) k0 < 0 ? (k0 = k) : (k1 = k), nz++;
    if (tangential && nz + na < 4) {
        double db;
        sim_barrier(d, w->dhat, &db, NULL);
        tg = scale * w->kappa * m * db / d;
        if (nz + na == 3) { /* the edge's direction (on side b, or side a's edge against a point) */
            const double *xe = s->x[nz == 2 ? s->act[t].b : s->act[t].a];
            int32_t i0 = nz == 2 ? ib[k0] : ia[0], i1 = nz == 2 ? ib[k1] : ia[1];
            double l = 0;
            for (int i = 0; i < 3; i++) e[i] = xe[3 * i1 + i] - xe[3 * i0 + i], l += e[i] * e[i];
            l = sqrt(l);
            for (int i = 0; i < 3; i++) e[i] = l > 0 ? e[i] / l : 0;
        }
    }
    for (int q = 0; q < 6; q++) {
        int i = PI_[q], ii = PJ_[q];
        double P = (i == ii) - r[i] * r[ii] / (d * d) - e[i] * e[ii];
        cf[q] = c * r[i] * r[ii] + tg * P;
    }
}

/* ---- lagged smoothed Coulomb friction (IPC, Li et al. 2020 §5; sim_friction in contact.h) ----
 * Per pair within d̂ at the step's start x⁰: the normal force λ = −κ m b′(d⁰), the closest
 * points' weights and a tangent basis T ⊥ n⁰, all held over the step; Δ = (Σ u_i x_i − Σ w_j y_j)
 * − r⁰ is the pair's relative motion since x⁰, with the lagged weights. */
/* friction pair t of the store: its stencil's relative position at the bodies' x + α dx minus r⁰ */
static void fr_delta(const SimWorld *w, const double *ge, const int32_t *ix, const SimContactPair *q, double alpha, double D[3]) {
    const struct SimWorldScratch *s = w->ws;
    for (int i = 0; i < 3; i++) D[i] = -ge[i];
    for (int side = 0; side < 2; side++) {
        if ((side ? q->b : q->a) < 0) continue; /* a plane */
        const SimContactBody *B = &s->bodies[side ? q->b : q->a];
        for (int k = 0; k < (side ? 3 : 2); k++) {
            int32_t p = side ? ix[k] : ix[3 + k];
            double c = side ? -ge[4 + k] : ge[7 + k];
            if (p < 0 || c == 0) continue;
            for (int i = 0; i < 3; i++) D[i] += c * (B->x[3 * p + i] + (B->dx ? alpha * B->dx[3 * p + i] : 0));
        }
    }
}

/* Σ μ λ φ(|u|) over the step's friction pairs at α (each pair's μ λ lagged in its ge[3]) */
static double friction_energy(const SimWorld *w, double alpha) {
    const struct SimWorldScratch *s = w->ws;
    double E = 0;
    for (int64_t f = 0; f < s->nfr; f++) {
        const double *ge = s->frgeo + GEO * f;
        double D[3];
        fr_delta(w, ge, s->fridx + 5 * f, &s->fr[f], alpha, D);
        E += sim_friction(D, s->frT + 6 * f, ge[3], s->fr_eps, NULL, NULL);
    }
    return E;
}

/* scale · ∇(μ Σ λ φ) added to g: the gradient in Δ on side a's points (times their weights),
 * minus it on side b's */
static void friction_gradient(const SimWorld *w, double scale, double *g) {
    const struct SimWorldScratch *s = w->ws;
    for (int64_t f = 0; f < s->nfr; f++) {
        const double *ge = s->frgeo + GEO * f;
        const int32_t *ix = s->fridx + 5 * f;
        const SimContactPair *q = &s->fr[f];
        double D[3], F[3];
        fr_delta(w, ge, ix, q, 0, D);
        sim_friction(D, s->frT + 6 * f, scale * ge[3], s->fr_eps, F, NULL);
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            for (int k = 0; k < (side ? 3 : 2); k++) {
                int32_t p = side ? ix[k] : ix[3 + k];
                double wt = side ? -ge[4 + k] : ge[7 + k];
                if (p < 0 || wt == 0) continue;
                double Fp[3] = {wt * F[0], wt * F[1], wt * F[2]};
                add_point_force(w, body, p, Fp, g);
            }
        }
    }
}

/* the six coefficients of friction pair f's 3 × 3 Hessian in Δ, scaled; a dedup term's negative
 * one (μ λ < 0) is left out of the PSD matrix (tangential false) */
static void friction_coefficients(const SimWorld *w, double scale, int64_t f, bool tangential, double cf[6]) {
    const struct SimWorldScratch *s = w->ws;
    const double *ge = s->frgeo + GEO * f;
    if (!tangential && ge[3] < 0) {
        memset(cf, 0, sizeof(double) * 6);
        return;
    }
    double D[3], H[9];
    fr_delta(w, ge, s->fridx + 5 * f, &s->fr[f], 0, D);
    sim_friction(D, s->frT + 6 * f, scale * ge[3], s->fr_eps, NULL, H);
    for (int q = 0; q < 6; q++) cf[q] = H[3 * PI_[q] + PJ_[q]];
}

/* room for one more friction pair in the store (its four parallel arrays grow together);
 * 0, or -1 when out of memory (the arrays that did grow are kept) */
static int fr_reserve(struct SimWorldScratch *s) {
    if (s->nfr < s->fr_cap) return 0;
    int64_t cap = s->fr_cap ? 2 * s->fr_cap : 256;
    SimContactPair *q = realloc(s->fr, sizeof *q * (size_t)cap);
    if (q) s->fr = q;
    double *g = realloc(s->frgeo, sizeof(double) * GEO * (size_t)cap);
    if (g) s->frgeo = g;
    double *T = realloc(s->frT, sizeof(double) * 6 * (size_t)cap);
    if (T) s->frT = T;
    int32_t *ix = realloc(s->fridx, sizeof(int32_t) * 5 * (size_t)cap);
    if (ix) s->fridx = ix;
    if (!q || !g || !T || !ix) return -1;
    s->fr_cap = cap;
    return 0;
}

/* adds friction pair (object a's contact point p against a plane: b = −1) to the store */
static int fr_push_plane(struct SimWorldScratch *s, int a, int64_t p, const double *x0, double lam, const double *nrm) {
    if (fr_reserve(s)) return -1;
    s->fr[s->nfr] = (SimContactPair){.a = a, .b = -1, .p = (int32_t)p, .q = -1, .f = -1};
    double *ge = s->frgeo + GEO * s->nfr, *T = s->frT + 6 * s->nfr, ax[3] = {0, 0, 0}, t1[3], t2[3];
    int32_t *ix = s->fridx + 5 * s->nfr;
    memcpy(ge, x0, sizeof(double) * 3), ge[3] = lam, ge[4] = ge[5] = ge[6] = 0, ge[7] = 1, ge[8] = 0, ge[9] = 1;
    ix[0] = ix[1] = ix[2] = -1, ix[3] = (int32_t)p, ix[4] = -1;
    int m = fabs(nrm[0]) <= fabs(nrm[1]) && fabs(nrm[0]) <= fabs(nrm[2]) ? 0 : fabs(nrm[1]) <= fabs(nrm[2]) ? 1 : 2;
    ax[m] = 1;
    base_vec3_cross(nrm, ax, t1);
    double l = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
    for (int i = 0; i < 3; i++) t1[i] /= l;
    base_vec3_cross(nrm, t1, t2);
    memcpy(T, t1, sizeof t1), memcpy(T + 3, t2, sizeof t2);
    s->nfr++;
    return 0;
}

/* Friction against each object's planes (its penalty contact, solver.h: k Σ min(0, n·x − h)² over
 * the mesh vertices, force 2k|d| each): lagged at x⁰ on the contact points (the proxy's vertices,
 * a subset of the mesh's) below a plane, each with λ = 2k|d|, scaled so that their sum is the
 * mesh vertices' (the proxy samples the same contact patch more coarsely), times the μ of the
 * object's and the plane's materials. */
static int friction_planes(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const SimObject *o = &w->obj[k];
        const ObjInfo *oi = &s->oi[k];
        if (!o->nplanes) continue;
        const double *xp = s->bodies[k].x; /* the contact points at x⁰ */
        double *xv = NULL;
        if (o->nv) {
            xv = malloc(sizeof(double) * 3 * (size_t)o->nv);
            if (!xv) return -1;
            sim_object_vertices(o, xv); /* o->z is still x⁰ */
        }
        for (int pl = 0; pl < o->nplanes; pl++) {
            const SimPlane *P = &o->planes[pl];
            double dm = 0, dp = 0;
            for (int64_t v = 0; xv && v < o->nv; v++) {
                double d = P->normal[0] * xv[3 * v] + P->normal[1] * xv[3 * v + 1] + P->normal[2] * xv[3 * v + 2] - P->offset;
                if (d < 0) dm -= d;
            }
            for (int64_t p = 0; p < oi->np; p++) {
                double d = P->normal[0] * xp[3 * p] + P->normal[1] * xp[3 * p + 1] + P->normal[2] * xp[3 * p + 2] - P->offset;
                if (d < 0) dp -= d;
            }
            double mu = sim_contact_mu(&w->contact, o->contact_material, P->material);
            if (!(dp > 0) || !(mu > 0)) continue;
            double ratio = xv ? mu * dm / dp : mu;
            for (int64_t p = 0; p < oi->np; p++) {
                double d = P->normal[0] * xp[3 * p] + P->normal[1] * xp[3 * p + 1] + P->normal[2] * xp[3 * p + 2] - P->offset;
                if (d < 0 && fr_push_plane(s, k, p, xp + 3 * p, -2 * P->stiffness * d * ratio, P->normal)) {
                    free(xv);
                    return -1;
                }
            }
        }
        free(xv);
    }
    return 0;
}

/* body b's contact material (deformables, then rigid bodies) */
static int body_material(const SimWorld *w, int b) {
    return b < w->nobj ? w->obj[b].contact_material : w->rigid[b - w->nobj].contact_material;
}

/* The step's friction pairs: the candidates within d̂ at the step's start (bodies at x⁰), with
 * μ λ (μ of the two bodies' materials), weights, r⁰ and T lagged. */
/* The step's first pass over the candidates at x⁰ (one stencil per pair): the barrier sum Σ w m b
 * without κ (*B0: κ is applied after the adaptive rule, which needs *dmin, the smallest distance
 * first) and, with friction, every pair within d̂ of a pair of materials with μ > 0 put aside in
 * the friction store with its stencil (its factor w m, b′, d and μ held in the λ, T slots until
 * friction_collect). One pass where there were two (a third of a capped pile's broad-phase part). */
static int start_pass(SimWorld *w, double dt, double *B0, double *dmin) {
    struct SimWorldScratch *s = w->ws;
    s->nfr = 0;
    s->fr_eps = w->contact.eps_v * dt;
    bool fric = sim_contact_any_friction(&w->contact);
    double E = 0, m = INFINITY;
    for (int64_t k = 0; k < s->cand.n; k++) {
        const SimContactPair *q = &s->cand.pairs[k];
        double r[3], ua[2], wb[3];
        int32_t ia[2], ib[3];
        double d = sim_contact_pair_stencil(s->bodies, q, 0, r, ua, ia, wb, ib);
        m = fmin(m, d);
        if (!(d < w->dhat)) continue;
        double db, f = pair_factor(s, q, 0);
        E += f * sim_barrier(d, w->dhat, &db, NULL);
        if (!fric) continue;
        double mu = sim_contact_mu(&w->contact, body_material(w, q->a), body_material(w, q->b));
        if (!(mu > 0)) continue;
        if (fr_reserve(s)) return -1;
        double *ge = s->frgeo + GEO * s->nfr, *T = s->frT + 6 * s->nfr;
        s->fr[s->nfr] = *q;
        memcpy(ge, r, sizeof r), ge[3] = f, memcpy(ge + 4, wb, sizeof wb), memcpy(ge + 7, ua, sizeof ua), ge[9] = db;
        T[0] = d, T[1] = mu;
        memcpy(s->fridx + 5 * s->nfr, ib, sizeof ib), memcpy(s->fridx + 5 * s->nfr + 3, ia, sizeof ia);
        s->nfr++;
    }
    *B0 = E, *dmin = m;
    return 0;
}

/* The lagged friction pairs start_pass put aside, with the step's κ: the normal force λ, stored
 * as μ λ (the pair's Coulomb force bound), and the tangent basis; then the planes'. */
static int friction_collect(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    int64_t n = 0;
    for (int64_t k = 0; k < s->nfr; k++) {
        const double *gk = s->frgeo + GEO * k, *Tk = s->frT + 6 * k;
        double d = Tk[0], mu = Tk[1];
        /* the dedup's negative terms take their share of friction too: where the triangles at a
         * feature agree on it, their friction pairs are the same and the sum is one contact's */
        double lam = -w->kappa * gk[3] * gk[9];
        if (lam == 0) continue;
        lam *= mu;
        double *ge = s->frgeo + GEO * n, *T = s->frT + 6 * n;
        if (n < k) {
            s->fr[n] = s->fr[k];
            memcpy(ge, gk, sizeof(double) * GEO), memcpy(s->fridx + 5 * n, s->fridx + 5 * k, sizeof(int32_t) * 5);
        }
        ge[3] = lam, ge[9] = 1;
        /* T: the normal's two perpendiculars (the first from the axis least along n) */
        double nv[3] = {ge[0] / d, ge[1] / d, ge[2] / d}, ax[3] = {0, 0, 0}, t1[3], t2[3];
        int m = fabs(nv[0]) <= fabs(nv[1]) && fabs(nv[0]) <= fabs(nv[2]) ? 0 : fabs(nv[1]) <= fabs(nv[2]) ? 1 : 2;
        ax[m] = 1;
        base_vec3_cross(nv, ax, t1);
        double l = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
        for (int i = 0; i < 3; i++) t1[i] /= l;
        base_vec3_cross(nv, t1, t2);
        memcpy(T, t1, sizeof t1), memcpy(T + 3, t2, sizeof t2);
        n++;
    }
    s->nfr = n;
    return friction_planes(w);
}

/* Adds sgn · K6 (r_a × 6 r_b: the six K_e, e = (i ≤ i'), side by side) to Hr's block of objects
 * (a, b): K_e at coordinate blocks (i, i') and (i', i) alike, as the pairs' 3 × 3 coefficients
 * C are symmetric (Σ C_ii' u vᵀ = Σ C_i'i u vᵀ). */
static void scatter6(const struct SimWorldScratch *s, const ObjInfo *A, const ObjInfo *B, const double *K6, double sgn) {
    int64_t NR = s->nred, ra = A->r, rb = B->r;
    for (int e = 0; e < 6; e++) {
        int i = PI_[e], ii = PJ_[e];
        double *blk = s->Hr + (A->roff + i * ra) * NR + B->roff + ii * rb;
        for (int64_t x = 0; x < ra; x++)
            for (int64_t y = 0; y < rb; y++) blk[x * NR + y] += sgn * K6[x * 6 * rb + e * rb + y];
        if (i == ii) continue;
        blk = s->Hr + (A->roff + ii * ra) * NR + B->roff + i * rb;
        for (int64_t x = 0; x < ra; x++)
            for (int64_t y = 0; y < rb; y++) blk[x * NR + y] += sgn * K6[x * 6 * rb + e * rb + y];
    }
}

/* The transposes: Hr's block (b, a) gets sgn · K6ᵀ blockwise (K6 as built for the block (a, b)). */
static void scatter6_transposed(const struct SimWorldScratch *s, const ObjInfo *B, const ObjInfo *A, const double *K6,
                                double sgn) {
    int64_t NR = s->nred, ra = A->r, rb = B->r;
    for (int e = 0; e < 6; e++) {
        int i = PI_[e], ii = PJ_[e];
        /* (a, i ; b, ii) block K_e lands transposed at (b, ii ; a, i), and at (b, i ; a, ii) when i ≠ ii */
        for (int pass = 0; pass < (i == ii ? 1 : 2); pass++) {
            int bi = pass ? i : ii, ai = pass ? ii : i;
            double *blk = s->Hr + (B->roff + bi * rb) * NR + A->roff + ai * ra;
            for (int64_t y = 0; y < rb; y++)
                for (int64_t x = 0; x < ra; x++) blk[y * NR + x] += sgn * K6[x * 6 * rb + e * rb + y];
        }
    }
}

/* The pair barrier's Hessian added to Hr (the reduced Newton matrix, NR × NR), from the pairs'
 * rows that contact_prepare stored. A pair with 3 × 3
 * coefficient C and rows u (its point's) and v (the other side's: a point, or the triangle's
 * corners weighted at the closest point — the weights held fixed, so the Hessian is the pinned
 * closest point's, exact for point pairs) adds C ⊗ u uᵀ to its point's object block, C ⊗ v vᵀ to
 * the other's and −C ⊗ u vᵀ between them. Per object (and per object pair) one product Uᵀ Y
 * over the pairs' rows, Y = [C_e u] for the six e = (i ≤ i'). Records the coupling in comp. */
static int barrier_hessian(SimWorld *w, double scale, bool tangential) {
    struct SimWorldScratch *s = w->ws;
    int64_t r_max = s->rmax, nall = s->nact + s->nfr, n = nall + 1;
    /* scratch: U (n × r), Y (n × 6r), K6 (r × 6r), per pair coefficients (n × 6) */
    size_t need_u = (size_t)(n * r_max * 7 + 6 * r_max * r_max + 6 * n);
    double *U = realloc(s->U, sizeof(double) * need_u);
    if (!U) return -1;
    s->U = U;
    double *Y = U + n * r_max, *K6 = Y + 6 * n * r_max, *cf = K6 + 6 * r_max * r_max;
    for (int64_t t = 0; t < nall; t++) {
        pair_coefficients(w, scale, t, tangential, cf + 6 * t);
    }
    for (int a = 0; a < w->nobj; a++) {
        const ObjInfo *A = &s->oi[a];
        int64_t ra = A->r, P = 0;
        /* (a, a): every pair with a side in a */
        for (int64_t t = 0; t < nall; t++) {
            const SimContactPair *q = &s->act[t];
            if (q->a != a && q->b != a) continue;
            double *u = U + P * ra, *y = Y + P * 6 * ra;
            memcpy(u, s->Ug + (2 * t + (q->a == a ? 0 : 1)) * r_max, sizeof(double) * (size_t)ra);
            for (int e = 0; e < 6; e++)
                for (int64_t j = 0; j < ra; j++) y[e * ra + j] = cf[6 * t + e] * u[j];
            P++;
        }
        if (!P) continue;
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ra, (int)(6 * ra), (int)P, 1.0, U, (int)ra, Y,
                    (int)(6 * ra), 0.0, K6, (int)(6 * ra));
        scatter6(s, A, A, K6, 1);
        /* (a, b), b > a deformable */
        for (int b = a + 1; b < w->nobj; b++) {
            const ObjInfo *B = &s->oi[b];
            int64_t rb = B->r;
            P = 0;
            for (int64_t t = 0; t < nall; t++) {
                const SimContactPair *q = &s->act[t];
                if (!((q->a == a && q->b == b) || (q->a == b && q->b == a))) continue;
                int sa = q->a == a ? 0 : 1;
                double *y = Y + P * 6 * rb;
                const double *v = s->Ug + (2 * t + 1 - sa) * r_max;
                memcpy(U + P * ra, s->Ug + (2 * t + sa) * r_max, sizeof(double) * (size_t)ra);
                for (int e = 0; e < 6; e++)
                    for (int64_t j = 0; j < rb; j++) y[e * rb + j] = cf[6 * t + e] * v[j];
                P++;
            }
            if (!P) continue;
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ra, (int)(6 * rb), (int)P, 1.0, U, (int)ra, Y,
                        (int)(6 * rb), 0.0, K6, (int)(6 * rb));
            /* H_ab(i, i') = H_ab(i', i) = −K; H_ba = H_abᵀ */
            scatter6(s, A, B, K6, -1);
            scatter6_transposed(s, B, A, K6, -1);
            s->hr_dirty[a * w->nobj + b] = s->hr_dirty[b * w->nobj + a] = true;
            int ca = s->comp[a], cb = s->comp[b];
            if (ca != cb)
                for (int o = 0; o < w->nobj; o++)
                    if (s->comp[o] == cb) s->comp[o] = ca;
        }
    }
    return 0;
}

/* ---- the objects' part ---------------------------------------------------------------------- */

static double objects_energy(SimWorld *w, const double *Z, const double *Ztil, double dt, double t, double *g) {
    struct SimWorldScratch *s = w->ws;
    double E = 0;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        E += sim_object_objective(&w->obj[k], Z + oi->off, Ztil + oi->off, dt, t, g ? g + oi->off : NULL, NULL);
    }
    return E;
}

/* Object k's reduced block (Hob) from its step Hessian in s->Hk: (I ⊗ N)ᵀ H_k (I ⊗ N), one
 * coordinate block (i, i') at a time, T = H_ii' N (nb × r) then Nᵀ T: T stays in L1, where the
 * whole H_k (I ⊗ N) at once (n × 3r, 300 KB at 16 handles) would not (sag: 3% a frame) */
static void reduce_object_block(const SimWorld *w, int k) {
    struct SimWorldScratch *s = w->ws;
    const ObjInfo *A = &s->oi[k];
    int64_t NR = A->m, n = A->n, nb = A->nb, r = A->r;
    double *out = s->Hob + A->hoff, *T = s->tmp;
    for (int i = 0; i < 3; i++)
        for (int ii = 0; ii < 3; ii++) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)r, (int)nb, 1.0, s->Hk + i * nb * n + ii * nb,
                        (int)n, A->N, (int)r, 0.0, T, (int)r);
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r, (int)r, (int)nb, 1.0, A->N, (int)r, T, (int)r, 0.0,
                        out + i * r * NR + ii * r, (int)NR);
        }
}

/* The objects' part of the reduced Newton matrix: each object's step Hessian (its elastic term
 * lagged when `lagged`, solver.h, reassembled when `fresh`) reduced into its block of Hob.
 * Returns whether any elastic Hessian was assembled. */
static bool objects_hessian(SimWorld *w, const double *Z, const double *Ztil, double dt, double t, bool lagged,
                            bool fresh) {
    struct SimWorldScratch *s = w->ws;
    bool any = !lagged;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        double *H = oi->N ? s->Hk : s->Hob + oi->hoff; /* no subspace: the block itself */
        if (lagged)
            any |= sim_object_lagged_hessian(&w->obj[k], Z + oi->off, dt, t, fresh, H);
        else
            sim_object_objective(&w->obj[k], Z + oi->off, Ztil + oi->off, dt, t, NULL, H);
        if (oi->N) reduce_object_block(w, k);
        const double *Kr = lagged && oi->N ? sim_object_lagged_reduced(&w->obj[k]) : NULL;
        if (Kr) /* the elastic term kept in the subspace (solver.h): dt² Kr into the block */
            for (int64_t a = 0; a < oi->m; a++)
                cblas_daxpy((int)oi->m, dt * dt, Kr + a * oi->m, 1, s->Hob + oi->hoff + a * oi->m, 1);
    }
    return any;
}

/* gr = each object's reduced gradient (its subspace's Nᵀ g per block, or a copy) */
static void reduce_g(const SimWorld *w, const double *g, double *gr) {
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &w->ws->oi[k];
        sim_subspace_reduce(oi->nb, oi->r, oi->N, g + oi->off, gr + oi->roff);
    }
}

/* dz = each object's step from its reduced one (dz = (I ⊗ N) dy, or a copy) */
static void expand(const SimWorld *w, const double *dy, double *dz) {
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &w->ws->oi[k];
        sim_subspace_expand(oi->nb, oi->r, oi->N, dy + oi->roff, dz + oi->off);
    }
}

/* x = Hr⁻¹ b per connected component (x may be b). With refactor, each component's block of Hr is
 * factored into Lh (one after another: Σ dim² ≤ NR²); without, the factors of the last refactor
 * are reused (s->comp, which fixes the components, is only rebuilt with a new factorization, so
 * the blocks line up). */
static int solve_components(SimWorld *w, bool refactor, int attempts, int *ncomp, int *shifted, const double *b,
                            double *x) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred, off = 0;
    *ncomp = 0;
    if (shifted) *shifted = 0;
    int *members = malloc(sizeof(int) * (size_t)(w->nobj + 1));
    if (!members) return -1;
    int rc = 0;
    for (int c = 0; c < w->nobj && !rc; c++) {
        int nm = 0;
        int64_t dim = 0;
        for (int o = 0; o < w->nobj; o++)
            if (s->comp[o] == c) members[nm++] = o, dim += s->oi[o].m;
        if (!nm) continue;
        (*ncomp)++;
        double *L = s->Lh + off, *S = s->sub, *rhs = s->tmp;
        off += dim * dim;
        /* gather the component's rows/columns (and factor), solve */
        int64_t ru = 0;
        for (int u = 0; u < nm; u++) {
            const ObjInfo *A = &s->oi[members[u]];
            for (int64_t i = 0; i < A->m; i++, ru++) {
                int64_t rv = 0;
                for (int v = 0; v < nm && refactor && nm > 1; v++) {
                    const ObjInfo *B = &s->oi[members[v]];
                    memcpy(S + ru * dim + rv, s->Hr + (A->roff + i) * NR + B->roff, sizeof(double) * (size_t)B->m);
                    rv += B->m;
                }
                rhs[ru] = b[A->roff + i];
            }
        }
        if (refactor) {
            /* one object: its block of Hr as it stands (no gather into S first) */
            const double *src = nm == 1 ? s->Hr + s->oi[members[0]].roff * (NR + 1) : S;
            int tries = sim_chol_shifted(L, src, nm == 1 ? (int)NR : (int)dim, (int)dim, CHOL_SHIFT, attempts);
            if (tries < 0) {
                rc = 1;
                break;
            }
            if (shifted) *shifted += tries;
        }
        /* two triangular solves (dpotrs would pack L for a matrix right-hand side) */
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)dim, L, (int)dim, rhs, 1);
        cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, (int)dim, L, (int)dim, rhs, 1);
        ru = 0;
        for (int u = 0; u < nm; u++) {
            const ObjInfo *A = &s->oi[members[u]];
            memcpy(x + A->roff, rhs + ru, sizeof(double) * (size_t)A->m);
            ru += A->m;
        }
    }
    free(members);
    return rc;
}

/* CG's relative residual (in the preconditioner's norm) and products per Newton direction */
#define CG_ETA 1e-2
#define CG_MAX 16

/* ---- Newton directions: conjugate gradients on the exact Hessian ------------------------------
 *
 * The exact pair-barrier Hessian is often indefinite (its tangential term, −κ|b′|/d, is of the
 * size of the lightest subspace directions' inertia), and assembling it costs as much as a
 * factorization. So the direction comes from preconditioned CG on the exact matrix, applied
 * without assembling it (hess_apply: the objects' blocks times v, plus Σ_pairs J_pᵀ C_p J_p v
 * through the pairs' points, O(pairs · r)), with the Cholesky factors of the PSD matrix (the
 * per-pair projected barrier, which always factors) as the preconditioner. Where the exact
 * Hessian is positive definite, CG converges to its Newton step; where CG meets negative
 * curvature it stops at the last iterate, still a descent direction (Steihaug 1983), or on the
 * first iteration takes the preconditioned gradient step. The factors are kept across
 * iterations and steps while CG converges quickly with them, and refreshed when it does not. */

/* The active pairs' exact Hessians in factored form for hess_apply: per pair its two rows
 * (reduced, r_max apart; none for a rigid side) and the six coefficients. */
static int contact_prepare(SimWorld *w, double scale) {
    struct SimWorldScratch *s = w->ws;
    int64_t nall = s->nact + s->nfr;
    if (nall > s->pair_cap) {
        int64_t cap = nall + nall / 2 + 64;
        double *ug = realloc(s->Ug, sizeof(double) * 2 * (size_t)(cap * s->rmax));
        if (ug) s->Ug = ug;
        double *cf = realloc(s->cfx, sizeof(double) * 6 * (size_t)cap);
        if (cf) s->cfx = cf;
        if (!ug || !cf) return -1;
        s->pair_cap = cap;
    }
    for (int64_t t = 0; t < nall; t++) {
        const SimContactPair *q = &s->act[t];
        for (int side = 0; side < 2; side++)
            if ((side ? q->b : q->a) >= 0 && (side ? q->b : q->a) < w->nobj) pair_row(w, t, side, true, s->Ug + (2 * t + side) * s->rmax);
        pair_coefficients(w, scale, t, true, s->cfx + 6 * t);
    }
    return 0;
}

/* out = H v with H the exact reduced Newton matrix: the objects' blocks (Hob) and each pair's
 * C ⊗ [u; −v][u; −v]ᵀ through its two rows. */
static void hess_apply(const SimWorld *w, const double *v, double *out) {
    const struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        cblas_dsymv(CblasRowMajor, CblasUpper, (int)A->m, 1.0, s->Hob + A->hoff, (int)A->m, v + A->roff, 1, 0.0,
                    out + A->roff, 1);
    }
    for (int64_t t = 0; t < s->nact + s->nfr; t++) {
        const SimContactPair *q = &s->act[t];
        double dd[3] = {0, 0, 0};
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *A = &s->oi[body];
            double ds[3], sg = side ? -1 : 1;
            rows_times_coords(1, A->r, s->Ug + (2 * t + side) * s->rmax, v + A->roff, ds, false);
            dd[0] += sg * ds[0], dd[1] += sg * ds[1], dd[2] += sg * ds[2];
        }
        const double *c = s->cfx + 6 * t;
        double f[3] = {c[0] * dd[0] + c[1] * dd[1] + c[2] * dd[2], c[1] * dd[0] + c[3] * dd[1] + c[4] * dd[2],
                       c[2] * dd[0] + c[4] * dd[1] + c[5] * dd[2]};
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < 0 || body >= w->nobj) continue; /* static: a rigid body or a plane (−1) */
            const ObjInfo *A = &s->oi[body];
            const double *u = s->Ug + (2 * t + side) * s->rmax;
            double *o0 = out + A->roff, *o1 = o0 + A->r, *o2 = o1 + A->r, sg = side ? -1 : 1;
            double f0 = sg * f[0], f1 = sg * f[1], f2 = sg * f[2];
#pragma omp simd
            for (int64_t j = 0; j < A->r; j++) o0[j] += f0 * u[j], o1[j] += f1 * u[j], o2[j] += f2 * u[j];
        }
    }
}

/* Hr = the objects' blocks (Hob) on its diagonal, each object its own component. Only the
 * off-diagonal blocks the last assembly's pairs wrote are zeroed (the rest still are): with ten
 * objects Hr is 1920² doubles, and clearing all of it (30 MB) took 3% of a capped ten-object pile,
 * whose off-diagonal blocks are nearly all zero (most components are one object). */
static void hr_from_objects(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred;
    for (int a = 0; a < w->nobj; a++)
        for (int b = 0; b < w->nobj; b++) {
            if (!s->hr_dirty[a * w->nobj + b]) continue;
            const ObjInfo *A = &s->oi[a], *B = &s->oi[b];
            for (int64_t i = 0; i < A->m; i++) memset(s->Hr + (A->roff + i) * NR + B->roff, 0, sizeof(double) * (size_t)B->m);
            s->hr_dirty[a * w->nobj + b] = false;
        }
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        for (int64_t i = 0; i < A->m; i++)
            memcpy(s->Hr + (A->roff + i) * NR + A->roff, s->Hob + A->hoff + i * A->m, sizeof(double) * (size_t)A->m);
        s->comp[k] = k;
    }
}

/* Factors the PSD Newton matrix: the objects' blocks plus the projected pair Hessians (which also
 * fixes the components), with growing shifts if even that does not factor. 0, 1: no factor, -1: oom. */
static int factor_psd(SimWorld *w, double scale, bool contact, int *ncomp) {
    struct SimWorldScratch *s = w->ws;
    memset(s->hf_ok, 0, sizeof(bool) * (size_t)w->nobj); /* Lh is about to hold other factors */
    double t0 = base_cpu_now();
    hr_from_objects(w);
    if (contact && barrier_hessian(w, scale, false)) return -1;
    /* the assembly is the Hessians' share of the direction's time (ws_direction counts it all as solves) */
    double th = base_cpu_now() - t0;
    w->last.t_hessian += th, w->last.t_solve -= th;
    /* factors only: the right-hand side is a dummy */
    int rc = solve_components(w, true, 8, ncomp, NULL, s->cg, s->cg);
    s->have_factor = rc == 0;
    return rc;
}

/* dy ≈ −H⁻¹ gr by preconditioned CG (see above), to a relative residual eta in the preconditioner's
 * norm, at most kmax products. Returns the products used; *slow when it did not get there (or
 * met negative curvature at once), *negative when it met negative curvature. */
static int newton_direction(SimWorld *w, double eta, int kmax, bool *slow, bool *negative) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred;
    double *x = s->cg, *r = x + NR, *z = r + NR, *p = z + NR, *q = p + NR;
    int nc;
    *slow = true, *negative = false;
    for (int64_t i = 0; i < NR; i++) r[i] = -s->gr[i], x[i] = 0;
    solve_components(w, false, 0, &nc, NULL, r, z);
    memcpy(p, z, sizeof(double) * (size_t)NR);
    double rz = cblas_ddot((int)NR, r, 1, z, 1), rz0 = rz;
    int k = 0;
    while (k < kmax && rz > 0) {
        hess_apply(w, p, q);
        k++;
        double pq = cblas_ddot((int)NR, p, 1, q, 1);
        if (!(pq > 0)) {
            *negative = true;
            if (k == 1) memcpy(x, p, sizeof(double) * (size_t)NR); /* the preconditioned gradient step */
            else *slow = false;
            break;
        }
        double a = rz / pq;
        cblas_daxpy((int)NR, a, p, 1, x, 1);
        cblas_daxpy((int)NR, -a, q, 1, r, 1);
        solve_components(w, false, 0, &nc, NULL, r, z);
        double rz1 = cblas_ddot((int)NR, r, 1, z, 1);
        if (rz1 <= eta * eta * rz0) {
            *slow = false;
            break;
        }
        for (int64_t i = 0; i < NR; i++) p[i] = z[i] + (rz1 / rz) * p[i];
        rz = rz1;
    }
    if (rz0 == 0) *slow = false;
    memcpy(s->dy, x, sizeof(double) * (size_t)NR);
    return k;
}

/* Σ_k grᵀ M_r,k⁻¹ gr: the gradient's size in the mass metric, the stop test. With the projected
 * barrier Hessian it bounds the Newton decrement (H ⪰ blockdiag M_r: every added term is PSD);
 * the exact one can be softer tangentially, and the test is then one on the gradient alone. */
static double mass_bound(const SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    double b = 0;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        int r = (int)oi->r, three = 3, info = 0;
        if (!r) continue;
        double *x = s->tmp;
        memcpy(x, s->gr + oi->roff, sizeof(double) * (size_t)oi->m);
        dpotrs_("L", &r, &three, oi->Lm, &r, x, &r, &info, 1);
        b += cblas_ddot((int)oi->m, s->gr + oi->roff, 1, x, 1);
    }
    return b;
}

/* body b (deformables, then rigid bodies) for the contact layer: its points, and the surface
 * triangles over them (a deformable's binding mesh; none when its contact points are the
 * cubature points) */
static SimContactBody body_of(const SimWorld *w, int b, const double *x, const double *dx, int is_static) {
    SimContactBody B = {.x = x, .dx = dx, .is_static = is_static};
    /* the edges for the edge–edge pairs (ne = 0 without them: the dedup's point–edge terms still
     * read edges) and the dedup's tables */
    if (w->ws->edges[b]) B.ne = w->contact.edge_edge ? w->ws->nedges[b] : 0, B.edges = w->ws->edges[b], B.edge_len2 = w->ws->elen2[b];
    if (w->ws->fedges[b]) B.face_edges = w->ws->fedges[b], B.edge_uses = w->ws->euses[b], B.vert_coef = w->ws->vcoef[b];
    if (b < w->nobj) {
        const ObjInfo *oi = &w->ws->oi[b];
        B.np = oi->np;
        if (oi->nf) B.nf = oi->nf, B.faces = oi->faces;
    } else {
        const SimRigid *rb = &w->rigid[b - w->nobj];
        B.np = rb->nv, B.nf = rb->nf, B.faces = rb->faces;
    }
    return B;
}

/* the broad phase's candidates for energies (margin d̂/2), with the dedup's terms (contact.h) */
static int candidates(const SimWorld *w, const SimContactBody *bodies, SimContactSet *set) {
    if (sim_contact_broad_phase(bodies, w->nobj + w->nrigid, 0.5 * w->dhat, set)) return -1;
    return w->contact.dedup ? sim_contact_dedup(bodies, set) : 0;
}

/* bodies with the deformables at Z (+ dZ when given) and the rigid bodies static at their pose */
static void set_bodies(SimWorld *w, const double *Z, const double *dZ) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *oi = &s->oi[k];
        obj_points(&w->obj[k], oi, Z + oi->off, s->x[k]);
        if (dZ) obj_disp(oi, dZ + oi->off, s->dx[k]);
        s->bodies[k] = body_of(w, k, s->x[k], dZ ? s->dx[k] : NULL, 0);
    }
    for (int r = 0; r < w->nrigid; r++) s->bodies[w->nobj + r] = body_of(w, w->nobj + r, s->x[w->nobj + r], NULL, 1);
}

/* the longest displacement of a deformable body's contact point in the bodies' dx */
static double longest_move(const SimWorld *w) {
    const struct SimWorldScratch *s = w->ws;
    double m2 = 0;
    for (int k = 0; k < w->nobj; k++) {
        const double *dx = s->dx[k];
        for (int64_t p = 0; p < s->oi[k].np; p++)
            m2 = fmax(m2, dx[3 * p] * dx[3 * p] + dx[3 * p + 1] * dx[3 * p + 1] + dx[3 * p + 2] * dx[3 * p + 2]);
    }
    return sqrt(m2);
}

/* ---- rigid bodies: velocity, CCD-limited move, reaction ------------------------------------- */

static int rigid_advance(SimWorld *w, double dt) {
    struct SimWorldScratch *s = w->ws;
    w->last.rigid_beta = 1;
    for (int r = 0; r < w->nrigid; r++) {
        SimRigid *rb = &w->rigid[r];
        sim_rigid_update_velocity(rb, w->planes, w->nplanes, dt);
        double beta = 1;
        if (w->contact.enabled && w->nobj) {
            /* deformables static at their current state, this body moving */
            SimContactBody *bd = malloc(sizeof *bd * (size_t)(w->nobj + 1));
            if (!bd) return -1;
            for (int k = 0; k < w->nobj; k++) {
                obj_points(&w->obj[k], &s->oi[k], w->obj[k].z, s->x[k]);
                bd[k] = body_of(w, k, s->x[k], NULL, 1);
            }
            double *xr = s->x[w->nobj + r], *dxr = s->dx[w->nobj + r];
            sim_rigid_vertices(rb, xr);
            sim_rigid_trial_displacement(rb, dt, dxr);
            bd[w->nobj] = body_of(w, w->nobj + r, xr, dxr, 0);
            int rc = sim_contact_broad_phase(bd, w->nobj + 1, 0.5 * w->dhat, &s->cand);
            if (!rc) beta = sim_contact_ccd(bd, &s->cand, w->contact.min_sep);
            free(bd);
            if (rc) return -1;
        }
        sim_rigid_move(rb, w->planes, w->nplanes, dt, beta);
        sim_rigid_vertices(rb, s->x[w->nobj + r]);
        w->last.rigid_beta = fmin(w->last.rigid_beta, beta);
    }
    return 0;
}

/* the barrier's force and torque on each rigid body at the final state (applied next step) */
static void rigid_reaction(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    for (int r = 0; r < w->nrigid; r++) memset(w->rigid[r].force, 0, sizeof(double) * 3), memset(w->rigid[r].torque, 0, sizeof(double) * 3);
    for (int64_t t = 0; t < s->nact; t++) {
        const SimContactPair *q = &s->act[t];
        const double *r = s->ageo + GEO * t, d = r[3], *wt = r + 4, *ua = r + 7;
        double db;
        sim_barrier(d, w->dhat, &db, NULL);
        db *= r[9]; /* the mollifier's own force on a rigid edge is left out (nearly parallel edges only) */
        /* F = ∂(κ b)/∂x_p = κ b′ r/d: the point gets −F, the other side's points +w_j F (b′ < 0:
         * both pushed apart) */
        for (int side = 0; side < 2; side++) {
            int body = side ? q->b : q->a;
            if (body < w->nobj) continue;
            SimRigid *rb = &w->rigid[body - w->nobj];
            for (int k = 0; k < (side ? 3 : 2); k++) {
                int32_t pt = side ? s->aidx[5 * t + k] : s->aidx[5 * t + 3 + k];
                double c = side ? wt[k] : -ua[k];
                if (pt < 0 || c == 0) continue;
                double f[3], arm[3];
                for (int i = 0; i < 3; i++) f[i] = c * w->kappa * db * r[i] / d, arm[i] = s->x[body][3 * pt + i] - rb->c[i];
                rb->force[0] += f[0], rb->force[1] += f[1], rb->force[2] += f[2];
                double tq[3];
                base_vec3_cross(arm, f, tq);
                rb->torque[0] += tq[0], rb->torque[1] += tq[1], rb->torque[2] += tq[2];
            }
        }
    }
}

/* ---- the coupled step as a problem of the Newton driver (sim/newton.h) ---------------------- */

typedef struct {
    SimWorld *w;
    double dt, t1;
    bool contact;
    double Eo, dmin; /* the last trial's objects' energy and smallest pair distance */
    double sweep;    /* the fraction of dz the bodies' dx hold (ws_step_bound): trial α is α / sweep there */
} WorldStep;

static double ws_measure(void *ctx, const double *g) {
    WorldStep *c = ctx;
    reduce_g(c->w, g, c->w->ws->gr);
    return mass_bound(c->w);
}

/* every object's block (its elastic term lagged, solver.h), then the active pairs' factored
 * exact Hessians for the CG products */
static int ws_hessian(void *ctx, const double *z, bool lagged, bool fresh_el) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    double t0 = base_cpu_now();
    int assembled = objects_hessian(w, z, w->ws->ztil, c->dt, c->t1, lagged, fresh_el);
    double t1 = base_cpu_now();
    w->last.t_hessian += t1 - t0;
    if (c->contact && contact_prepare(w, c->dt * c->dt)) return -1;
    w->last.t_pairs += base_cpu_now() - t1;
    return assembled;
}

/* Without contact the Newton matrix is the objects' blocks, each PSD: dy = −H⁻¹ gr by a dense
 * Cholesky per object, as exact as CG preconditioned by those factors (one product) and cheaper.
 * Fresh: every block is factored, unless it is bitwise equal to the one last factored (free
 * flight with the lagged elastic term, an unchanged set of plane contacts) and keeps its
 * factor; not fresh: a chord step with the last factors. 0, 1: a block did not factor. */
static int direct_direction(SimWorld *w, bool fresh) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        const ObjInfo *A = &s->oi[k];
        int m = (int)A->m, nrhs = 1, info = 0;
        double *Hb = s->Hob + A->hoff, *L = s->Lh + A->hoff, *F = s->Hf + A->hoff, *dy = s->dy + A->roff;
        size_t bytes = sizeof(double) * (size_t)m * (size_t)m;
        if (fresh && !(s->hf_ok[k] && !memcmp(Hb, F, bytes))) {
            int tries = sim_chol_shifted(L, Hb, m, m, CHOL_SHIFT, 8);
            memcpy(F, Hb, bytes);
            s->hf_ok[k] = tries >= 0;
            if (tries < 0) return 1;
            w->obj[k].last.chol_retries += tries;
            w->last.factorizations++;
        }
        if (!s->hf_ok[k]) return 1;
        for (int i = 0; i < m; i++) dy[i] = -s->gr[A->roff + i];
        dpotrs_("L", &m, &nrhs, L, &m, dy, &m, &info, 1);
    }
    w->last.components = w->nobj;
    return 0;
}

/* Without contact: direct_direction. With it: without the lag every Hessian is factored (plain
 * Newton); with it the factors are kept while CG converges quickly with them, and a slow CG
 * refactors and runs again. Not fresh: a chord step with the last factors as they are. */
static int ws_direction(void *ctx, bool fresh, bool lagged, double *dz) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    struct SimWorldScratch *s = w->ws;
    SimWorldStats *st = &w->last;
    int rc = 0;
    double t0 = base_cpu_now();
    if (!c->contact) {
        rc = direct_direction(w, fresh);
        s->have_factor = false; /* Lh now holds the blocks' factors, not the CG preconditioner's */
    } else if (fresh) {
        bool refactor = !lagged || !s->have_factor;
        for (;;) {
            if (refactor) {
                rc = factor_psd(w, c->dt * c->dt, c->contact, &st->components);
                if (rc) break;
                st->factorizations++;
            }
            bool slow, negative;
            st->cg_products += newton_direction(w, CG_ETA, CG_MAX, &slow, &negative);
            st->negative += negative;
            if (!slow || refactor) break;
            refactor = true;
        }
    } else {
        for (int64_t i = 0; i < s->nred; i++) s->dy[i] = -s->gr[i];
        rc = s->have_factor ? solve_components(w, false, 0, &st->components, NULL, s->dy, s->dy) : 1;
    }
    st->t_solve += base_cpu_now() - t0;
    if (rc) return rc;
    expand(w, s->dy, dz);
    return 0;
}

/* CCD: the fraction of the step no pair's distance falls below min_sep × its current value in */
static int ws_step_bound(void *ctx, const double *z, const double *dz, double *alpha) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    struct SimWorldScratch *s = w->ws;
    double t0 = base_cpu_now();
    set_bodies(w, z, dz);
    /* A direction that moves a point much farther than the step's own motion (truncated CG on
     * an indefinite barrier Hessian can) sweeps boxes over much of the scene: the ten-object
     * pile under cap 2 had frames with 2-13 M candidates (one 12.6 s long) against ~40 k
     * typically. The line search is then capped to the fraction of dz that moves no point
     * farther than sweep_len, and the broad phase and CCD see that fraction only: the candidates
     * stay complete for every α the line search tries, so no crossing, whatever the cap. */
    double m = longest_move(w), sweep = m > s->sweep_len ? s->sweep_len / m : 1;
    if (sweep < 1)
        for (int k = 0; k < w->nobj; k++)
            for (int64_t q = 0; q < 3 * s->oi[k].np; q++) s->dx[k][q] *= sweep;
    c->sweep = sweep;
    w->last.sweep_limited += sweep < 1;
    if (candidates(w, s->bodies, &s->cand)) return -1;
    w->last.candidates = s->cand.n;
    *alpha = sweep * sim_contact_ccd(s->bodies, &s->cand, w->contact.min_sep);
    if (*alpha < 1) w->last.ccd_limited++;
    w->last.t_broad += base_cpu_now() - t0;
    return 0;
}

/* the objects' energies (and gradients, on the first trial: most are accepted) and the barrier
 * over the swept step's candidates */
static double ws_trial(void *ctx, const double *zt, double alpha, double *gt) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    double Et = c->Eo = objects_energy(w, zt, w->ws->ztil, c->dt, c->t1, gt);
    c->dmin = INFINITY;
    double t0 = base_cpu_now();
    if (c->contact) {
        double a = alpha / c->sweep; /* the bodies' dx hold sweep × dz */
        Et += c->dt * c->dt * (barrier_energy(w, w->ws->cand.pairs, w->ws->cand.n, a, &c->dmin) + friction_energy(w, a));
    }
    w->last.t_pairs += base_cpu_now() - t0;
    return Et;
}

/* the new active set, and E, g with the barrier over it */
static int ws_accept(void *ctx, const double *z, bool have_grad, double Et, double *E, double *g) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    struct SimWorldScratch *s = w->ws;
    (void)Et;
    set_bodies(w, z, NULL);
    double t0 = base_cpu_now();
    if (c->contact) {
        w->last.min_distance = fmin(w->last.min_distance, c->dmin);
        if (collect_active(w, NULL)) return -1;
    }
    double t1 = base_cpu_now();
    *E = have_grad ? c->Eo : objects_energy(w, z, s->ztil, c->dt, c->t1, g);
    double t2 = base_cpu_now();
    if (c->contact) {
        *E += c->dt * c->dt * (active_energy(w) + friction_energy(w, 0));
        barrier_gradient(w, c->dt * c->dt, g);
        friction_gradient(w, c->dt * c->dt, g);
    }
    w->last.t_pairs += (t1 - t0) + (base_cpu_now() - t2);
    return 0;
}

/* ---- the step ------------------------------------------------------------------------------- */

static int world_step(SimWorld *w, double dt, char *err, size_t errlen);

/* The step's BLAS calls are many mid-sized products: single-threaded (base/par.h); its own point
 * loops still take threads by their work. */
int sim_world_step(SimWorld *w, double dt, char *err, size_t errlen) {
    int prev = base_par_blas_serial_begin();
    int rc = world_step(w, dt, err, errlen);
    base_par_blas_serial_end(prev);
    return rc;
}

/* whether object k moves with a rig (sim/rig.h), or any does (k < 0) */
static bool rigged(const SimWorld *w, int k) {
    for (int j = k < 0 ? 0 : k; j < (k < 0 ? w->nobj : k + 1); j++)
        if (w->obj[j].rig_uc || w->obj[j].rig_uv) return true;
    return false;
}

/* A pair may close to this fraction of its distance under a rig's move before it counts as a hit. */
#define RIG_SWEEP_SEP 1e-2

/* The rigs' own move since the last step's end, u_r(t₀) → u_r(t₁) at z₀, swept by CCD against
 * the other bodies held still. The rig is prescribed input: no iterate of the step can hold it
 * back, and the step's own CCD starts after it (obj_points), so a rig that carries a surface into
 * or through another body within one step would leave a crossing the barrier then keeps. *alpha:
 * the fraction of the move that is clear (1: all of it; also before a rigged object's first step).
 * 0, or -1 out of memory. */
static int rig_sweep(SimWorld *w, double *alpha) {
    struct SimWorldScratch *s = w->ws;
    *alpha = 1;
    bool any = false;
    for (int k = 0; k < w->nobj; k++) {
        const SimObject *o = &w->obj[k];
        const ObjInfo *oi = &s->oi[k];
        bool moving = s->xr && s->xr[k];
        if (moving) { /* from where the last step left it to where the rig now puts it */
            obj_points(o, oi, o->z, s->dx[k]);
            memcpy(s->x[k], s->xr[k], sizeof(double) * 3 * (size_t)oi->np);
            for (int64_t q = 0; q < 3 * oi->np; q++) s->dx[k][q] -= s->x[k][q];
            any = true;
        } else
            obj_points(o, oi, o->z, s->x[k]);
        s->bodies[k] = body_of(w, k, s->x[k], moving ? s->dx[k] : NULL, !moving);
    }
    if (!any) return 0;
    for (int r = 0; r < w->nrigid; r++) s->bodies[w->nobj + r] = body_of(w, w->nobj + r, s->x[w->nobj + r], NULL, 1);
    if (sim_contact_broad_phase(s->bodies, w->nobj + w->nrigid, 0.5 * w->dhat, &s->cand)) return -1;
    *alpha = sim_contact_ccd(s->bodies, &s->cand, RIG_SWEEP_SEP);
    return 0;
}

/* after a step: the rigged objects' contact points, where the next rig_sweep starts */
static int rig_keep(SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    if (!s->xr && !(s->xr = calloc((size_t)w->nobj, sizeof *s->xr))) return -1;
    for (int k = 0; k < w->nobj; k++) {
        if (!rigged(w, k)) continue;
        if (!s->xr[k] && !(s->xr[k] = malloc(sizeof(double) * 3 * (size_t)(s->oi[k].np + 1)))) return -1;
        obj_points(&w->obj[k], &s->oi[k], w->obj[k].z, s->xr[k]);
    }
    return 0;
}

/* the longest Newton move of a contact point the line search allows (ws_step_bound): this many
 * times the step's predicted (inertial) move, and at least this many d̂ */
#define SWEEP_PRED 2.0
#define SWEEP_DHAT 2.0

static int world_step(SimWorld *w, double dt, char *err, size_t errlen) {
    double t0 = base_now();
    if (!(dt > 0)) {
        base_errf(err, errlen, "sim: dt must be > 0 (got %g)", dt);
        return -1;
    }
    memset(&w->last, 0, sizeof w->last);
    double c0 = base_cpu_now();
    w->last.min_distance = INFINITY;
    w->last.rigid_beta = 1;
    struct SimWorldScratch *s = w->ws;
    /* a body alone has nothing to touch: no pairs, no barrier, no CCD */
    const bool contact = w->contact.enabled && w->nobj + w->nrigid > 1;
    if (rigid_advance(w, dt)) goto oom;
    if (!w->nobj) {
        w->t += dt;
        w->last.converged = true;
        w->last.seconds = base_now() - t0;
        return 0;
    }
    int64_t N = s->ntot;
    double t1 = w->t + dt, scale = 0, dt2 = dt * dt;
    int max_iters = 0, max_bt = 0, max_hessians = 1 << 30;
    double tol = INFINITY, armijo = 1, reuse_ratio = INFINITY, lag = INFINITY;
    for (int k = 0; k < w->nobj; k++) {
        SimObject *o = &w->obj[k];
        const ObjInfo *oi = &s->oi[k];
        scale += o->mass * o->diag * o->diag;
        if (o->newton.max_iters > max_iters) max_iters = o->newton.max_iters;
        if (o->newton.max_backtracks > max_bt) max_bt = o->newton.max_backtracks;
        tol = fmin(tol, o->newton.tol), armijo = fmin(armijo, o->newton.armijo);
        /* Hessian reuse as the single-object solver (solver.h), as cautious as the most cautious object */
        reuse_ratio = fmin(reuse_ratio, o->newton.reuse_ratio);
        lag = fmin(lag, o->newton.elastic_lag);
        if (o->newton.max_hessians < max_hessians) max_hessians = o->newton.max_hessians;
        memset(&o->last, 0, sizeof o->last);
        memcpy(s->z0 + oi->off, o->z, sizeof(double) * (size_t)oi->n);
        sim_object_predict(o, dt, t1, s->ztil + oi->off, s->zt + oi->off, s->dz, s->dy);
    }
    /* initial guess: z̃, with contact filtered by CCD from the feasible z₀ (IPC §4.2) */
    double Eobj = 0;     /* the objects' energy at the start z when have_g (its gradient in s->g) */
    bool have_g = false;
    s->cand.n = 0, s->nact = 0, s->nfr = 0;
    if (contact && rigged(w, -1)) {
        double ar;
        if (rig_sweep(w, &ar)) goto oom;
        if (ar < 1) {
            base_errf(err, errlen, "sim: at t = %g a rig's move over the step reaches another body (%.0f%% of it is clear; "
                      "the rig is prescribed, contact cannot hold it back): a smaller dt or a slower rig", w->t, 100 * ar);
            return -1;
        }
        s->cand.n = 0;
    }
    if (contact) {
        for (int64_t q = 0; q < N; q++) s->dz[q] = s->zt[q] - s->z0[q];
        double tb = base_cpu_now();
        set_bodies(w, s->z0, s->dz);
        if (candidates(w, s->bodies, &s->cand)) goto oom;
        /* the barrier at z₀ (its κ applied below, after the adaptive rule), the smallest distance
         * and the friction pairs in one pass */
        double B0;
        if (start_pass(w, dt, &B0, &w->last.min_distance)) goto oom;
        if (!(w->last.min_distance > 0) && rigged(w, -1)) {
            /* every step ends with all pairs apart, so only a rig's move before its first swept
             * step (rig_sweep) can have put a surface onto another body */
            base_errf(err, errlen, "sim: at t = %g a rig's move over the step carried a surface into another body "
                      "(pair distance %g m at the step's start): a smaller dt or a slower rig", w->t, w->last.min_distance);
            return -1;
        }
        /* IPC's adaptive κ (Li et al. 2020, §4.3), between steps so that each step's energy is one
         * function: when the closest pair is inside ξ d̂ and closer than at the last step's start,
         * double κ (up to κ_max), so the barrier holds what rests on contacts the initial rule did
         * not count (a corner, an edge, a pile) at ξ d̂ or above */
        double d0 = w->last.min_distance;
        if (d0 < w->contact.kappa_adapt * w->dhat && d0 < s->dmin_prev && w->kappa < w->kappa_max)
            w->kappa = fmin(2 * w->kappa, w->kappa_max);
        s->dmin_prev = d0;
        /* friction lagged at x⁰: the candidates of the swept guess hold every pair within d̂ at x⁰ */
        if (friction_collect(w)) goto oom;
        /* a Newton move may reach SWEEP_PRED times the step's predicted move, or SWEEP_DHAT d̂
         * (ws_step_bound) */
        s->sweep_len = fmax(SWEEP_DHAT * w->dhat, SWEEP_PRED * longest_move(w));
        double a0 = sim_contact_ccd(s->bodies, &s->cand, w->contact.min_sep);
        if (a0 < 1) w->last.ccd_limited++;
        w->last.t_broad += base_cpu_now() - tb;
        /* CCD alone lets the guess shrink a pair's gap to min_sep of its value at every step, and
         * a capped Newton loop need not win it back: under a cap the pile's pairs closed to ~1e-8 m
         * in a dozen frames, where additive CCD then crawls (64 advances per pair) and every later
         * step is cut to nothing. So the guess must not raise the step's energy: when E(z₀ + α Δ)
         * > E(z₀), Newton starts from z₀ itself (feasible; IPC's own start), whose first direction
         * sees the barrier's and the planes' curvature. Halving α instead holds every object back
         * with the one that meets a plane (all share α): the pile then hardly fell under a cap. */
        /* The objects' energy of the start Newton takes (z₀, or the guess) is evaluated here with
         * its gradient into s->g, once: each evaluation is a pass over all cubature points. */
        double E0 = objects_energy(w, s->z0, s->ztil, dt, t1, a0 > 0 ? NULL : s->g), tp = base_cpu_now();
        Eobj = E0, have_g = !(a0 > 0);
        E0 += dt2 * (w->kappa * B0 + friction_energy(w, 0));
        w->last.t_pairs += base_cpu_now() - tp;
        if (a0 > 0) {
            for (int64_t q = 0; q < N; q++) s->zt[q] = s->z0[q] + a0 * s->dz[q];
            double Eo = objects_energy(w, s->zt, s->ztil, dt, t1, s->g), Ea = Eo;
            tp = base_cpu_now();
            Ea += dt2 * (barrier_energy(w, s->cand.pairs, s->cand.n, a0, NULL) + friction_energy(w, a0));
            w->last.t_pairs += base_cpu_now() - tp;
            if (Ea <= E0) Eobj = Eo, have_g = true;
            else a0 = 0;
        }
        for (int64_t q = 0; q < N; q++) s->z[q] = s->z0[q] + a0 * s->dz[q];
        set_bodies(w, s->z, NULL);
        /* the candidates of the swept guess hold every pair within d̂ at z (contact.h) */
        double dz_min;
        if (collect_active(w, &dz_min)) goto oom;
        w->last.min_distance = fmin(w->last.min_distance, dz_min);
    } else
        memcpy(s->z, s->zt, sizeof(double) * (size_t)N);
    double E = have_g ? Eobj : objects_energy(w, s->z, s->ztil, dt, t1, s->g);
    if (contact) {
        E += dt2 * (active_energy(w) + friction_energy(w, 0));
        barrier_gradient(w, dt2, s->g);
        friction_gradient(w, dt2, s->g);
    }
    WorldStep ctx = {.w = w, .dt = dt, .t1 = t1, .contact = contact, .sweep = 1};
    SimNewtonProblem P = {.ctx = &ctx, .n = N, .z = s->z, .g = s->g, .gt = s->gt, .zt = s->zt, .dz = s->dz,
                          .measure = ws_measure, .hessian = ws_hessian, .direction = ws_direction,
                          .step_bound = contact ? ws_step_bound : NULL, .trial = ws_trial,
                          .accept = contact ? ws_accept : NULL};
    /* Hessian reuse as SimNewtonOptions says (solver.h), as cautious as the most cautious object.
     * With contact, the barrier's: every Armijo trial but the first without its gradient (the
     * barrier is re-evaluated over the new active set on acceptance anyway); with the lag, a
     * backtrack alone (which the barrier causes often and a new elastic term does not cure) does
     * not stale the elastic term: pile 23% less time; and a reassembly followed by another poor
     * iteration says the lag is not what slows this step (the barrier's non-convexity is): no
     * more reassemblies in it (pile: 4.0 → 1.2 per contact frame, 15% less time). Without it,
     * the trial that passes brings its gradient, and a backtrack stales the elastic term. */
    SimNewtonPolicy pol = {.max_iters = max_iters, .max_backtracks = max_bt, .max_hessians = max_hessians, .tol = tol,
                           .armijo = armijo, .reuse_ratio = reuse_ratio, .elastic_lag = lag, .scale = scale,
                           .grad_every_trial = !contact, .backtrack_is_poor = !contact, .one_refresh = contact};
    SimNewtonResult res;
    int nrc = sim_newton_solve(&P, &pol, E, &s->kel_stale, &res);
    s->g = P.g, s->gt = P.gt;
    if (nrc) goto oom;
    SimWorldStats *st = &w->last;
    st->backtracks = res.backtracks;
    st->iters = res.iters, st->hessians = res.hessians, st->failures = res.failures, st->converged = res.converged;
    st->decrement = res.decrement;
    if (contact && res.line_search_failed) set_bodies(w, s->z, NULL);
    if (!sim_newton_finite(N, s->z)) {
        base_errf(err, errlen, "sim: the state became non-finite at t = %g", t1);
        return -1;
    }
    st->active = s->nact;
    for (int k = 0; k < w->nobj; k++) {
        SimObject *o = &w->obj[k];
        const ObjInfo *oi = &s->oi[k];
        sim_newton_velocity(oi->n, s->z + oi->off, dt, o->z, o->zdot);
        o->t = t1;
    }
    if (contact) rigid_reaction(w);
    if (contact && rigged(w, -1) && rig_keep(w)) goto oom;
    w->t = t1;
    st->seconds = base_now() - t0;
    st->t_cpu = base_cpu_now() - c0;
    if (getenv("ANIMA_WORLD_DEBUG")) /* the leading newline ends a progress line drawn in place */
        base_logf(BASE_LOG_DEBUG,
                  "\nworld t=%.3f it %d hess %d fact %d fail %d ccd %d comps %d cand %lld act %lld dmin %.3g beta %.3g kappa %.4g ms %.1f",
                  w->t, st->iters, st->hessians, st->factorizations, st->failures, st->ccd_limited, st->components,
                  (long long)st->candidates, (long long)st->active, st->min_distance, st->rigid_beta, w->kappa, 1e3 * st->seconds);
    for (int k = 0; k < w->nobj; k++) {
        SimStepStats *os = &w->obj[k].last;
        os->iters = st->iters, os->hessians = st->hessians, os->failures = st->failures, os->converged = st->converged;
        os->decrement = st->decrement, os->seconds = k == 0 ? st->seconds : 0;
    }
    return 0;
oom:
    base_errf(err, errlen, "sim world: out of memory");
    return -1;
}

/* ---- one object: a world of one ------------------------------------------------------------ */

static void solo_release(void *p) {
    sim_world_free(p);
    free(p);
}

int sim_object_step(SimObject *o, double dt, char *err, size_t errlen) {
    if (!o->prep && sim_object_prepare(o, err, errlen)) return -1;
    SimWorld *w = sim_object_solo(o);
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w) {
            base_errf(err, errlen, "sim: out of memory");
            return -1;
        }
        if (sim_world_init(w, o, 1, NULL, 0, NULL, 0, NULL, err, errlen)) {
            solo_release(w);
            return -1;
        }
        sim_object_set_solo(o, w, solo_release);
    }
    w->obj = o; /* the object may have moved since (a struct copy carries its prepared state) */
    w->t = o->t;
    return sim_world_step(w, dt, err, errlen);
}

/* ---- reports -------------------------------------------------------------------------------- */

void sim_world_momentum(const SimWorld *w, double p[3]) {
    p[0] = p[1] = p[2] = 0;
    for (int k = 0; k < w->nobj; k++) {
        const SimObject *o = &w->obj[k];
        for (int i = 0; i < 3; i++) p[i] += cblas_ddot((int)o->nb, o->mvec, 1, o->zdot + i * o->nb, 1);
    }
    for (int r = 0; r < w->nrigid; r++)
        for (int i = 0; i < 3; i++) p[i] += w->rigid[r].mass * w->rigid[r].v[i];
}

/* the bodies at the current state (deformables at z, rigid bodies at their pose), no step */
static void bodies_now(const SimWorld *w) {
    struct SimWorldScratch *s = w->ws;
    for (int k = 0; k < w->nobj; k++) {
        obj_points(&w->obj[k], &s->oi[k], w->obj[k].z, s->x[k]);
        s->bodies[k] = body_of(w, k, s->x[k], NULL, 0);
    }
    for (int r = 0; r < w->nrigid; r++) {
        sim_rigid_vertices(&w->rigid[r], s->x[w->nobj + r]);
        s->bodies[w->nobj + r] = body_of(w, w->nobj + r, s->x[w->nobj + r], NULL, 1);
    }
}

double sim_world_energy(const SimWorld *w) {
    double e = 0;
    for (int k = 0; k < w->nobj; k++) e += sim_object_energy(&w->obj[k]).total;
    for (int r = 0; r < w->nrigid; r++) e += sim_rigid_energy(&w->rigid[r]);
    if (w->contact.enabled && w->ws && w->nobj + w->nrigid > 1) {
        bodies_now(w);
        SimContactSet set = {0};
        if (!candidates(w, w->ws->bodies, &set)) e += barrier_energy(w, set.pairs, set.n, 0, NULL);
        sim_contact_set_free(&set);
    }
    return e;
}

const SimProxy *sim_world_proxy(const SimWorld *w, int k) {
    return w->ws && k >= 0 && k < w->nobj && w->ws->oi[k].proxy.np ? &w->ws->oi[k].proxy : NULL;
}

double sim_world_min_distance(const SimWorld *w) {
    if (!w->ws || w->nobj + w->nrigid < 2) return INFINITY;
    bodies_now(w);
    SimContactSet set = {0};
    double m = INFINITY;
    if (!sim_contact_broad_phase(w->ws->bodies, w->nobj + w->nrigid, 0.5 * w->dhat, &set))
        m = sim_contact_min_distance(w->ws->bodies, &set, 0);
    sim_contact_set_free(&set);
    return m;
}

double sim_world_hessian_product_error(SimWorld *w, double dt) {
    struct SimWorldScratch *s = w->ws;
    int64_t NR = s->nred, N = s->ntot;
    double *v = malloc(sizeof(double) * (size_t)(3 * NR + N + 1));
    int *comp = malloc(sizeof(int) * (size_t)(w->nobj + 1));
    if (!v || !comp) {
        free(v), free(comp);
        return INFINITY;
    }
    double *h1 = v + NR, *h2 = h1 + NR, *Z = h2 + NR, err = 0, big = 0;
    for (int k = 0; k < w->nobj; k++) memcpy(Z + s->oi[k].off, w->obj[k].z, sizeof(double) * (size_t)s->oi[k].n);
    memcpy(comp, s->comp, sizeof(int) * (size_t)w->nobj);
    /* the pairs within d̂ now (a broad phase of the static bodies), the objects' blocks */
    set_bodies(w, Z, NULL);
    if (candidates(w, s->bodies, &s->cand) || collect_active(w, NULL) ||
        contact_prepare(w, dt * dt)) {
        free(v), free(comp);
        return INFINITY;
    }
    objects_hessian(w, Z, Z, dt, w->t, true, false);
    /* the assembled exact matrix */
    hr_from_objects(w);
    if (barrier_hessian(w, dt * dt, true)) err = INFINITY;
    for (int64_t i = 0; i < NR; i++) v[i] = sin(1.7 * (double)i + 0.3);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)NR, (int)NR, 1.0, s->Hr, (int)NR, v, 1, 0.0, h1, 1);
    hess_apply(w, v, h2);
    for (int64_t i = 0; i < NR; i++) err = fmax(err, fabs(h1[i] - h2[i])), big = fmax(big, fabs(h1[i]));
    memcpy(s->comp, comp, sizeof(int) * (size_t)w->nobj);
    free(v), free(comp);
    return err / fmax(big, 1e-300);
}
