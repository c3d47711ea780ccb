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
#include "sim/dense.h"
#include "sim/internal.h"
#include "sim/lapack.h"
#include "sim/newton.h"
#include "sim/world_internal.h"

/* IPC's ceiling on the adaptive barrier stiffness: 100 × its initial value (Li et al. 2020) */
#define KAPPA_MAX_RATIO 100

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
    free(s->Hkeep), free(s->Hred), free(s->hred_ok);
    if (s->edges)
        for (int b = 0; b < nbodies; b++) free(s->edges[b]), free(s->elen2[b]);
    if (s->euses)
        for (int b = 0; b < nbodies; b++) free(s->euses[b]), free(s->fedges[b]), free(s->vcoef[b]);
    free(s->edges), free(s->nedges), free(s->elen2), free(s->euses), free(s->fedges), free(s->vcoef);
    free(s->fr), free(s->frgeo), free(s->frT), free(s->fridx), free(s->fru), free(s->frsec);
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
    sim_rows_times_coords(oi->np, oi->nb, oi->Bp, z, x, true);
}

static void obj_disp(const ObjInfo *oi, const double *dz, double *dx) {
    sim_rows_times_coords(oi->np, oi->nb, oi->Bp, dz, dx, false);
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
    int64_t off = 0, roff = 0, maxn = 1, hoff = 0, rmax = 1, koff = 0;
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
        oi->off = off, oi->roff = roff, oi->hoff = hoff, oi->koff = koff;
        off += oi->n, roff += oi->m, hoff += oi->m * oi->m, koff += oi->N ? oi->n * oi->n : 0;
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
    s->Hkeep = malloc(sizeof(double) * (size_t)(koff + 1)), s->Hred = malloc(sizeof(double) * (size_t)(hoff + 1));
    s->hred_ok = calloc((size_t)nobj + 1, sizeof(bool));
    s->rmax = rmax;
    if (!s->Hob || !s->cg || !s->Hf || !s->hf_ok || !s->hr_dirty || !s->Hkeep || !s->Hred || !s->hred_ok) goto oom;
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
    sim_world_reduce_g(c->w, g, c->w->ws->gr);
    return sim_world_mass_bound(c->w);
}

/* every object's block (its elastic term lagged, solver.h), then the active pairs' factored
 * exact Hessians for the CG products */
static int ws_hessian(void *ctx, const double *z, bool lagged, bool fresh_el) {
    WorldStep *c = ctx;
    SimWorld *w = c->w;
    double t0 = base_cpu_now();
    int assembled = sim_world_objects_hessian(w, z, w->ws->ztil, c->dt, c->t1, lagged, fresh_el);
    double t1 = base_cpu_now();
    w->last.t_hessian += t1 - t0;
    if (c->contact) sim_world_friction_turns(w);
    if (c->contact && sim_world_contact_prepare(w, c->dt * c->dt)) return -1;
    w->last.t_pairs += base_cpu_now() - t1;
    return assembled;
}


/* Without contact: sim_world_direct_direction. With it: without the lag every Hessian is factored (plain
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
        rc = sim_world_direct_direction(w, fresh);
        s->have_factor = false; /* Lh now holds the blocks' factors, not the CG preconditioner's */
    } else if (fresh) {
        bool refactor = !lagged || !s->have_factor;
        for (;;) {
            if (refactor) {
                rc = sim_world_factor_psd(w, c->dt * c->dt, c->contact, &st->components);
                if (rc) break;
                st->factorizations++;
            }
            bool slow, negative;
            st->cg_products += sim_world_newton_direction(w, CG_ETA, CG_MAX, &slow, &negative);
            st->negative += negative;
            if (!slow || refactor) break;
            refactor = true;
        }
    } else {
        for (int64_t i = 0; i < s->nred; i++) s->dy[i] = -s->gr[i];
        rc = s->have_factor ? sim_world_solve_components(w, false, 0, &st->components, NULL, s->dy, s->dy) : 1;
    }
    st->t_solve += base_cpu_now() - t0;
    if (rc) return rc;
    sim_world_expand(w, s->dy, dz);
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
        Et += c->dt * c->dt * (sim_world_barrier_energy(w, w->ws->cand.pairs, w->ws->cand.n, a, &c->dmin) + sim_world_friction_energy(w, a));
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
        if (sim_world_collect_active(w, NULL)) return -1;
    }
    double t1 = base_cpu_now();
    *E = have_grad ? c->Eo : objects_energy(w, z, s->ztil, c->dt, c->t1, g);
    double t2 = base_cpu_now();
    if (c->contact) {
        *E += c->dt * c->dt * (sim_world_active_energy(w) + sim_world_friction_energy(w, 0));
        sim_world_barrier_gradient(w, c->dt * c->dt, g);
        sim_world_friction_gradient(w, c->dt * c->dt, g);
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
        if (sim_world_start_pass(w, dt, &B0, &w->last.min_distance)) goto oom;
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
        if (sim_world_friction_collect(w)) goto oom;
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
        E0 += dt2 * (w->kappa * B0 + sim_world_friction_energy(w, 0));
        w->last.t_pairs += base_cpu_now() - tp;
        if (a0 > 0) {
            for (int64_t q = 0; q < N; q++) s->zt[q] = s->z0[q] + a0 * s->dz[q];
            double Eo = objects_energy(w, s->zt, s->ztil, dt, t1, s->g), Ea = Eo;
            tp = base_cpu_now();
            Ea += dt2 * (sim_world_barrier_energy(w, s->cand.pairs, s->cand.n, a0, NULL) + sim_world_friction_energy(w, a0));
            w->last.t_pairs += base_cpu_now() - tp;
            if (Ea <= E0) Eobj = Eo, have_g = true;
            else a0 = 0;
        }
        for (int64_t q = 0; q < N; q++) s->z[q] = s->z0[q] + a0 * s->dz[q];
        set_bodies(w, s->z, NULL);
        /* the candidates of the swept guess hold every pair within d̂ at z (contact.h) */
        double dz_min;
        if (sim_world_collect_active(w, &dz_min)) goto oom;
        w->last.min_distance = fmin(w->last.min_distance, dz_min);
    } else
        memcpy(s->z, s->zt, sizeof(double) * (size_t)N);
    double E = have_g ? Eobj : objects_energy(w, s->z, s->ztil, dt, t1, s->g);
    if (contact) {
        E += dt2 * (sim_world_active_energy(w) + sim_world_friction_energy(w, 0));
        sim_world_barrier_gradient(w, dt2, s->g);
        sim_world_friction_gradient(w, dt2, s->g);
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
     * the trial that passes brings its gradient, and a backtrack stales the elastic term. With
     * contact a failed trial's next α comes from a quadratic fit, not halving (the barrier's and
     * friction's steep walls: converged pile 34.8 → 21.6 backtracks, 16.5 → 17.7 iterations a
     * contact frame, ~12% less CPU; its trajectory within 2.5% of the diagonal of halving's, where
     * tol / 10 moves it by 4.2%). */
    SimNewtonPolicy pol = {.max_iters = max_iters, .max_backtracks = max_bt, .max_hessians = max_hessians, .tol = tol,
                           .armijo = armijo, .reuse_ratio = reuse_ratio, .elastic_lag = lag, .scale = scale,
                           .grad_every_trial = !contact, .backtrack_is_poor = !contact, .one_refresh = contact,
                           .interpolate = contact};
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
        if (!candidates(w, w->ws->bodies, &set)) e += sim_world_barrier_energy(w, set.pairs, set.n, 0, NULL);
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
    if (candidates(w, s->bodies, &s->cand) || sim_world_collect_active(w, NULL) ||
        sim_world_contact_prepare(w, dt * dt)) {
        free(v), free(comp);
        return INFINITY;
    }
    sim_world_objects_hessian(w, Z, Z, dt, w->t, true, false);
    /* the assembled exact matrix */
    sim_world_hr_from_objects(w);
    if (sim_world_barrier_hessian(w, dt * dt, true, 0, s->nact + s->nfr)) err = INFINITY;
    for (int64_t i = 0; i < NR; i++) v[i] = sin(1.7 * (double)i + 0.3);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)NR, (int)NR, 1.0, s->Hr, (int)NR, v, 1, 0.0, h1, 1);
    sim_world_hess_apply(w, v, h2);
    for (int64_t i = 0; i < NR; i++) err = fmax(err, fabs(h1[i] - h2[i])), big = fmax(big, fabs(h1[i]));
    memcpy(s->comp, comp, sizeof(int) * (size_t)w->nobj);
    free(v), free(comp);
    return err / fmax(big, 1e-300);
}

/* ---- for tests: the contact terms one at a time (world_internal.h) ------------------------- */

int sim_world_lag_friction(SimWorld *w, double dt) {
    struct SimWorldScratch *s = w->ws;
    double B0, dmin;
    bodies_now(w);
    if (candidates(w, s->bodies, &s->cand) || sim_world_start_pass(w, dt, &B0, &dmin)) return -1;
    return sim_world_friction_collect(w);
}

double sim_world_contact_term(SimWorld *w, SimWorldTerm term, const double *Z, double *g, double *H) {
    struct SimWorldScratch *s = w->ws;
    bool barrier = term == SIM_WORLD_BARRIER;
    set_bodies(w, Z, NULL);
    s->cand.n = 0; /* friction: no barrier pairs, so the active store holds the friction pairs alone */
    if ((barrier && candidates(w, s->bodies, &s->cand)) || sim_world_collect_active(w, NULL)) return NAN;
    double E = barrier ? sim_world_active_energy(w) : sim_world_friction_energy(w, 0);
    if (g) {
        memset(g, 0, sizeof(double) * (size_t)s->ntot);
        if (barrier) sim_world_barrier_gradient(w, 1, g);
        else sim_world_friction_gradient(w, 1, g);
    }
    if (H) {
        if (sim_world_contact_prepare(w, 1)) return NAN;
        /* Hr holds the term alone; the components and factors left are stale */
        memset(s->Hr, 0, sizeof(double) * (size_t)(s->nred * s->nred));
        for (int k = 0; k < w->nobj; k++) s->comp[k] = k;
        s->have_factor = false;
        int64_t t0 = barrier ? 0 : s->nact, t1 = barrier ? s->nact : s->nact + s->nfr;
        if (sim_world_barrier_hessian(w, 1, true, t0, t1)) return NAN;
        memcpy(H, s->Hr, sizeof(double) * (size_t)(s->nred * s->nred));
    }
    return E;
}
