/* models/gs4d/eval.c — the held-out photometric figures and the geometry against a ground-truth
 * surface (eval.h) */
#include "models/gs4d/eval.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/sort.h"
#include "datasets/geometry/geometry.h"
#include "datasets/render/raster.h"
#include "models/gaussians/fit.h"
#include "models/gs4d/arap.h"

static const double WHITE[3] = {1, 1, 1};

double gs4d_eval_views(const Gs4dModel *m, const Gs4dData *d, double *ssim, double *per_psnr, double *per_ssim) {
    double s = 0, ss = 0;
    for (int v = 0; v < d->n; v++) {
        TensorScope *sc = tensor_scope_begin();
        Tensor *img = gs4d_render(m, &d->views[v].cam, d->views[v].time, WHITE), *ref = gs4d_target(d, v, WHITE);
        double p = gs_psnr(img, ref), q = ssim || per_ssim ? gs4d_ssim(img, ref) : NAN;
        s += p, ss += q;
        if (per_psnr) per_psnr[v] = p;
        if (per_ssim) per_ssim[v] = q;
        tensor_scope_end(sc);
    }
    if (ssim) *ssim = d->n ? ss / d->n : NAN;
    return d->n ? s / d->n : NAN;
}

void gs4d_eval_geometry(const Gs4dModel *m, const Gs4dData *held_out, const Gs4dSurfaceSeq *gt, Gs4dEvalProgressFn progress,
                        void *user, Gs4dGeometry *out) {
    memset(out, 0, sizeof *out);
    const Gs4dSurfaceSeq *s = gt;
    out->per_frame = base_malloc(sizeof(Gs4dFrameGeometry) * (size_t)(s->frames ? s->frames : 1));
    int64_t n = m->cfg.n, nv = s->nv;
    int ns = m->cfg.isotropic ? 1 : 3;
    float *pos3 = base_malloc(sizeof(float) * (size_t)n * 3 * (size_t)s->frames), *sc = base_malloc(sizeof(float) * (size_t)n * ns);
    float *rgb = base_malloc(sizeof(float) * (size_t)n * 3), *op = base_malloc(sizeof(float) * (size_t)n);
    float *vis = base_malloc(sizeof(float) * (size_t)n * 3);
    /* surface samples: area-weighted barycentric points of the canonical triangles, carried
     * along with the vertices per frame (plus the vertices themselves) */
    int64_t ns_s = 20000;
    float *samp = base_malloc(sizeof(float) * 3 * (size_t)(ns_s + nv));
    double *cum = base_malloc(sizeof(double) * (size_t)(s->nf ? s->nf : 1));
    double area = 0;
    for (int64_t t = 0; t < s->nf; t++) {
        const int32_t *f = s->faces + 3 * t;
        const float *a = s->rest + 3 * f[0], *b = s->rest + 3 * f[1], *c = s->rest + 3 * f[2];
        double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
        area += 0.5 * sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
        cum[t] = area;
    }
    int64_t *tri = base_malloc(sizeof(int64_t) * (size_t)ns_s);
    double *bary = base_malloc(sizeof(double) * 2 * (size_t)ns_s);
    TensorRng g = {.seed = 7, .stream = 11};
    uint32_t w[4];
    for (int64_t i = 0; i < ns_s; i++) {
        tensor_philox(g.seed, g.stream, g.offset++, w);
        double u = w[0] / 4294967296.0 * area, r1 = w[1] / 4294967296.0, r2 = w[2] / 4294967296.0;
        int64_t lo = 0, hi = s->nf - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (cum[mid] > u) hi = mid;
            else lo = mid + 1;
        }
        if (r1 + r2 > 1) r1 = 1 - r1, r2 = 1 - r2;
        tri[i] = lo, bary[2 * i] = r1, bary[2 * i + 1] = r2;
    }
    /* a pixel's footprint at the scene center, and the rasterizer's screen-space dilation
     * of every Gaussian (model.dilation px², 0.3 by default: σ ≥ 0.55 px on screen) in world
     * units: the resolution's own limit; σ_eff = √(σ² + dilation) is the blur a Gaussian's
     * silhouette has */
    double o[3], px;
    ds_camera_center(&held_out->views[0].cam, o);
    px = sqrt((o[0] - held_out->center[0]) * (o[0] - held_out->center[0]) + (o[1] - held_out->center[1]) * (o[1] - held_out->center[1]) +
              (o[2] - held_out->center[2]) * (o[2] - held_out->center[2])) / held_out->views[0].cam.fx;
    /* (rendered at supersample × the resolution, the dilation is that much smaller) */
    double ssk = m->cfg.supersample > 1 ? m->cfg.supersample : 1;
    double dil2 = m->cfg.dilation * px * px / (ssk * ssk), med_eff = 0, med_scale = 0;
    double diag_mean = 0, cham = 0, cham_max = 0, side_cs = 0, side_sc = 0, floor_c = 0, inside = 0, med_sig = 0, nvis_mean = 0;
    static const double QUANT[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
    double squant[5] = {0};
    double *dist = base_malloc(sizeof(double) * (size_t)n), *sig = base_malloc(sizeof(double) * (size_t)n);
    double *sige = base_malloc(sizeof(double) * (size_t)n);
    float *visr = base_malloc(sizeof(float) * (size_t)n);
    int64_t *near = base_malloc(sizeof(int64_t) * (size_t)n);
    float *inset_pts = base_malloc(sizeof(float) * 3 * (size_t)n);
    double inset_c = 0, inset_cs = 0, inset_sc = 0;
    /* the rendered surface (gs4d_surface_points) from the held-out views of each frame, and the
     * true surface those views see (the mesh rasterized through them), both back-projected */
    enum { SURF_PER_VIEW = 4000 };
    int maxv = 0;
    for (int f = 0, cnt = 0; f < s->frames; f++, cnt = 0) {
        for (int v = 0; v < held_out->n; v++) cnt += fabs(held_out->views[v].time - s->times[f]) < 1e-6;
        if (cnt > maxv) maxv = cnt;
    }
    float *surf = base_malloc(sizeof(float) * 3 * SURF_PER_VIEW * (size_t)(maxv ? maxv : 1));
    float *seen = base_malloc(sizeof(float) * 3 * SURF_PER_VIEW * (size_t)(maxv ? maxv : 1));
    double surf_c = 0, surf_cs = 0, surf_sc = 0;
    int surf_frames = 0;
    /* correspondence drift: the Gaussians visible in the first frame, each frame's nearest true
     * vertex, how far that vertex lies on the rest surface from the first frame's */
    double rest_diag = sqrt(ds_points_diagonal2(s->rest, nv));
    int64_t ntrk = 0, *trk = base_malloc(sizeof(int64_t) * (size_t)n), *near0 = base_malloc(sizeof(int64_t) * (size_t)n);
    int64_t *near_t = base_malloc(sizeof(int64_t) * (size_t)n);
    float *ptrk = base_malloc(sizeof(float) * 3 * (size_t)n);
    double *dtrk = base_malloc(sizeof(double) * (size_t)n), drift = 0, drift90 = 0;
    for (int f = 0; f < s->frames; f++) {
        const float *V = s->verts + (size_t)f * nv * 3;
        double lo3[3] = {INFINITY, INFINITY, INFINITY}, hi3[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int64_t i = 0; i < nv; i++)
            for (int a = 0; a < 3; a++) {
                samp[3 * (ns_s + i) + a] = V[3 * i + a];
                lo3[a] = fmin(lo3[a], V[3 * i + a]), hi3[a] = fmax(hi3[a], V[3 * i + a]);
            }
        for (int64_t i = 0; i < ns_s; i++) {
            const int32_t *t = s->faces + 3 * tri[i];
            for (int a = 0; a < 3; a++)
                samp[3 * i + a] = (float)(V[3 * t[0] + a] + bary[2 * i] * (V[3 * t[1] + a] - V[3 * t[0] + a]) +
                                          bary[2 * i + 1] * (V[3 * t[2] + a] - V[3 * t[0] + a]));
        }
        float *P = pos3 + (size_t)f * n * 3;
        gs4d_state_at(m, s->times[f], P, sc, rgb, op);
        /* the Gaussians that show: opacity ≥ 0.05 (fainter ones are invisible floaters);
         * their scale: the smallest axis when anisotropic (a flat splat's thickness, what
         * blurs its silhouette edge-on) */
        int64_t nvis = 0;
        for (int64_t i = 0; i < n; i++)
            if (op[i] >= 0.05f) {
                visr[nvis] = m->cfg.isotropic ? sc[i] : fminf(sc[3 * i], fminf(sc[3 * i + 1], sc[3 * i + 2]));
                memcpy(vis + 3 * nvis++, P + 3 * i, sizeof(float) * 3);
            }
        double diag = sqrt((hi3[0] - lo3[0]) * (hi3[0] - lo3[0]) + (hi3[1] - lo3[1]) * (hi3[1] - lo3[1]) +
                           (hi3[2] - lo3[2]) * (hi3[2] - lo3[2]));
        double cs, scd;
        gs4d_chamfer_sides(vis, nvis, samp, ns_s + nv, &cs, &scd);
        double c = nvis ? 100 * 0.5 * (cs + scd) / diag : NAN;
        cham += c / s->frames;
        cham_max = fmax(cham_max, c);
        diag_mean += diag / s->frames;
        side_cs += 100 * cs / diag / s->frames, side_sc += 100 * scd / diag / s->frames;
        nvis_mean += (double)nvis / s->frames;
        int64_t nsurf = 0, nseen = 0;
        for (int v = 0; v < held_out->n; v++) {
            if (!(fabs(held_out->views[v].time - s->times[f]) < 1e-6)) continue;
            const DsCamera *cv = &held_out->views[v].cam;
            nsurf += gs4d_surface_points(m, cv, s->times[f], 0.5, surf + 3 * nsurf, SURF_PER_VIEW);
            DsMesh gm = {.nv = nv, .nf = s->nf, .v = (float *)V, .f = (int32_t *)s->faces};
            DsRender rr;
            char rerr[256];
            if (ds_raster_render(&gm, cv, NULL, &rr, rerr, sizeof rerr) == 0) {
                nseen += ds_camera_backproject(cv, rr.depth, rr.alpha, 0.5, seen + 3 * nseen, SURF_PER_VIEW);
                ds_render_free(&rr);
            }
        }
        double sc_ab = NAN, sc_ba = NAN, sc_c = NAN;
        if (nsurf && nseen) {
            double tmp;
            gs4d_chamfer_sides(surf, nsurf, samp, ns_s + nv, &sc_ab, &tmp);
            gs4d_chamfer_sides(seen, nseen, surf, nsurf, &sc_ba, &tmp);
            sc_ab *= 100 / diag, sc_ba *= 100 / diag, sc_c = 0.5 * (sc_ab + sc_ba);
            surf_c += sc_c, surf_cs += sc_ab, surf_sc += sc_ba, surf_frames++;
        }
        if (f == 0)
            for (int64_t i = 0; i < n; i++)
                if (op[i] >= 0.05f) trk[ntrk++] = i;
        double fd = NAN;
        if (ntrk) {
            for (int64_t j = 0; j < ntrk; j++) memcpy(ptrk + 3 * j, P + 3 * trk[j], sizeof(float) * 3);
            gs4d_nearest(V, nv, ptrk, ntrk, dtrk, f == 0 ? near0 : near_t);
            for (int64_t j = 0; j < ntrk; j++) {
                const float *a = s->rest + 3 * near0[j], *b = s->rest + 3 * (f == 0 ? near0[j] : near_t[j]);
                dtrk[j] = 100 * sqrt((double)(a[0] - b[0]) * (a[0] - b[0]) + (double)(a[1] - b[1]) * (a[1] - b[1]) +
                                     (double)(a[2] - b[2]) * (a[2] - b[2])) / rest_diag;
            }
            qsort(dtrk, (size_t)ntrk, sizeof(double), base_cmp_double);
            fd = dtrk[ntrk / 2];
            drift += fd / s->frames, drift90 += dtrk[(int64_t)((ntrk - 1) * 0.9)] / s->frames;
        }
        out->per_frame[f] = (Gs4dFrameGeometry){s->times[f], c, 100 * cs / diag, 100 * scd / diag, nvis, sc_c, sc_ab, sc_ba, fd};
        /* what the metric gives for as many points as perfectly on the surface (uniform
         * samples, the first nvis of the i.i.d. ones): the floor n Gaussians can reach */
        if (nvis && nvis <= ns_s) floor_c += 100 * gs4d_chamfer(samp, nvis, samp, ns_s + nv) / diag / s->frames;
        /* signed distance of each visible center to the surface: the distance to the
         * nearest triangle sample, negative when behind that sample's triangle (outward
         * normals: the winding that gives the mesh a positive volume), in units of the
         * Gaussian's own scale */
        if (nvis) {
            double vol6 = 0;
            for (int64_t t = 0; t < s->nf; t++) {
                const float *a = V + 3 * s->faces[3 * t], *b = V + 3 * s->faces[3 * t + 1], *cc = V + 3 * s->faces[3 * t + 2];
                vol6 += a[0] * ((double)b[1] * cc[2] - (double)b[2] * cc[1]) - a[1] * ((double)b[0] * cc[2] - (double)b[2] * cc[0]) +
                        a[2] * ((double)b[0] * cc[1] - (double)b[1] * cc[0]);
            }
            gs4d_nearest(samp, ns_s, vis, nvis, dist, near);
            int64_t nin = 0;
            for (int64_t i = 0; i < nvis; i++) {
                const int32_t *t = s->faces + 3 * tri[near[i]];
                const float *a = V + 3 * t[0], *b = V + 3 * t[1], *cc = V + 3 * t[2];
                double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
                double nr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
                const float *q = samp + 3 * near[i], *pp = vis + 3 * i;
                double dot = (pp[0] - q[0]) * nr[0] + (pp[1] - q[1]) * nr[1] + (pp[2] - q[2]) * nr[2];
                bool in = (dot < 0) == (vol6 > 0);
                nin += in;
                sig[i] = (in ? -dist[i] : dist[i]) / (visr[i] > 0 ? visr[i] : 1);
                sige[i] = (in ? -dist[i] : dist[i]) / sqrt((double)visr[i] * visr[i] + dil2);
                dist[i] = 100 * (in ? -dist[i] : dist[i]) / diag;
            }
            qsort(dist, (size_t)nvis, sizeof(double), base_cmp_double);
            for (int qi = 0; qi < 5; qi++) squant[qi] += dist[(int64_t)((nvis - 1) * QUANT[qi])] / s->frames;
            /* the floor's samples pushed inward along their triangle's normal by the
             * centers' median depth: what a perfect layer at that depth would score, so
             * the inset's share of the Chamfer distance is measured, not guessed */
            double depth = fmax(0, -dist[nvis / 2]) * diag / 100;
            if (nvis <= ns_s) {
                for (int64_t i = 0; i < nvis; i++) {
                    const int32_t *t = s->faces + 3 * tri[i];
                    const float *a = V + 3 * t[0], *b = V + 3 * t[1], *cc = V + 3 * t[2];
                    double e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]}, e2[3] = {cc[0] - a[0], cc[1] - a[1], cc[2] - a[2]};
                    double nr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
                    double ln = sqrt(nr[0] * nr[0] + nr[1] * nr[1] + nr[2] * nr[2]), sgn = vol6 > 0 ? -1 : 1;
                    for (int ax = 0; ax < 3; ax++)
                        inset_pts[3 * i + ax] = (float)(samp[3 * i + ax] + (ln > 0 ? sgn * depth * nr[ax] / ln : 0));
                }
                double ics, isc;
                gs4d_chamfer_sides(inset_pts, nvis, samp, ns_s + nv, &ics, &isc);
                inset_c += 100 * 0.5 * (ics + isc) / diag / s->frames;
                inset_cs += 100 * ics / diag / s->frames, inset_sc += 100 * isc / diag / s->frames;
            }
            inside += (double)nin / (double)nvis / s->frames;
            /* the median (selection by sorting a copy is fine at these sizes) */
            qsort(sig, (size_t)nvis, sizeof(double), base_cmp_double);
            med_sig += sig[nvis / 2] / s->frames;
            qsort(sige, (size_t)nvis, sizeof(double), base_cmp_double);
            med_eff += sige[nvis / 2] / s->frames;
            for (int64_t i = 0; i < nvis; i++) sige[i] = visr[i];
            qsort(sige, (size_t)nvis, sizeof(double), base_cmp_double);
            med_scale += 100 * sige[nvis / 2] / diag / s->frames;
        }
        if (progress) progress(user, f + 1, s->frames);
    }
    free(dist), free(sig), free(sige), free(visr), free(near), free(inset_pts), free(surf), free(seen);
    free(trk), free(near0), free(near_t), free(ptrk), free(dtrk);
    /* rigidity: the trajectories' local neighborhoods (the kNN of the canonical centers)
     * against the ground-truth surface's own (the kNN of the canonical vertices) */
    int k = 8;
    float *rest = base_malloc(sizeof(float) * (size_t)n * 3);
    {
        Gs4dModel r = *m;
        r.step = 0, r.cfg.warmup = 1;
        gs4d_state_at(&r, 0, rest, sc, rgb, op);
    }
    int32_t *nbr = base_malloc(sizeof(int32_t) * (size_t)n * k), *nbv = base_malloc(sizeof(int32_t) * (size_t)nv * k);
    gs4d_knn(rest, n, NULL, k, nbr);
    gs4d_knn(s->rest, nv, NULL, k, nbv);
    double rig = gs4d_rigidity_error(pos3, s->frames, rest, n, nbr, k);
    double rig_gt = gs4d_rigidity_error(s->verts, s->frames, s->rest, nv, nbv, k);
    out->frames = s->frames, out->surface_frames = surf_frames;
    out->surface_chamfer = surf_frames ? surf_c / surf_frames : NAN;
    out->rendered_to_surface = surf_frames ? surf_cs / surf_frames : NAN;
    out->seen_to_rendered = surf_frames ? surf_sc / surf_frames : NAN;
    out->chamfer = cham, out->chamfer_max = cham_max, out->centers_to_surface = side_cs, out->surface_to_centers = side_sc;
    out->visible = nvis_mean, out->floor = floor_c, out->diag = diag_mean, out->pixel = px, out->median_scale = med_scale;
    out->inside = inside, out->median_signed = med_sig, out->median_signed_eff = med_eff;
    memcpy(out->quantiles, squant, sizeof squant);
    out->inset = inset_c, out->inset_cs = inset_cs, out->inset_sc = inset_sc;
    out->rigidity = rig, out->rigidity_gt = rig_gt;
    out->drift = ntrk ? drift : NAN, out->drift_p90 = ntrk ? drift90 : NAN, out->tracked = ntrk;
    free(pos3), free(sc), free(rgb), free(op), free(vis), free(samp), free(cum), free(tri), free(bary), free(rest);
    free(nbr), free(nbv);
}

void gs4d_geometry_free(Gs4dGeometry *g) {
    free(g->per_frame);
    memset(g, 0, sizeof *g);
}
