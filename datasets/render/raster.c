/* datasets/render/raster.c — the CPU triangle rasterizer (see raster.h for what it guarantees).
 *
 * Three phases:
 * 1. setup (parallel over faces): camera-space vertices, back-face decision, clipping against
 *    the near plane and the guard band, projection, snapping to fixed point; each face yields
 *    0..6 screen triangles, written in face order (a counting pass, a prefix sum, a writing
 *    pass) so that the result does not depend on the thread count.
 * 2. binning: each screen triangle is listed in the bands of rows its bounding box touches.
 * 3. raster (parallel over bands): each band is owned by one thread, which walks its triangles
 *    in order, tests pixel centers with integer edge functions and the top-left rule, and does
 *    the depth test and shading.
 * Supersampling renders at s× the resolution with a scaled camera and box-filters down. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"
#include "datasets/render/raster.h"
#include "base/errbuf.h"

#define SUBPIX 256       /* fixed point: 1/256 pixel, as GPUs use (8 sub-pixel bits) */
#define GUARD 8192.0     /* guard band in pixels: keeps fixed-point products far from overflow */
#define BAND 16          /* rows per band, the unit of parallel work */
#define MAX_CLIP 9       /* a triangle clipped by 5 planes has at most 3 + 5 vertices */

DsRasterOptions ds_raster_options_default(void) {
    return (DsRasterOptions){
        .background = {1, 1, 1},
        .color = {0.7f, 0.7f, 0.7f},
        .ambient = 0.25f,
        .diffuse = 0.75f,
        .light = DS_LIGHT_HEADLIGHT,
        .light_dir = {0, 1, 0},
        .normals = DS_NORMALS_VERTEX,
        .cull_backfaces = false,
        .unlit = false,
        .supersample = 1,
    };
}

void ds_render_free(DsRender *r) {
    if (!r) return;
    free(r->rgb);
    free(r->depth);
    free(r->alpha);
    memset(r, 0, sizeof *r);
}

/* A vertex during clipping: camera-space position and the attributes interpolated with it. */
typedef struct {
    double p[3];
    float col[3], nrm[3];
} ClipVert;

/* A screen triangle, oriented so that its (fixed-point) area is positive. */
typedef struct {
    int64_t X[3], Y[3]; /* vertex positions in 1/SUBPIX pixel */
    int64_t area;       /* twice the signed area, in SUBPIX² units; > 0 */
    /* unsnapped positions (pixels) and their doubled area: coverage is decided on the snapped
     * vertices, but attributes and depth are interpolated on the exact ones, so snapping (up to
     * 1/512 px) does not bend the depth of far, grazing surfaces */
    double u[3], v[3], uv_area;
    int x0, x1, y0, y1; /* pixels whose centers may be covered (inclusive, clamped to the image) */
    float iz[3];        /* 1/z of each vertex, for perspective-correct interpolation */
    float col[3][3], nrm[3][3];
} ScreenTri;

/* Everything setup needs, fixed for one render. */
typedef struct {
    const DsMesh *m;
    const float *vn; /* vertex normals in world space, or NULL for flat shading */
    const DsRasterOptions *o;
    double R[9], t[3];
    double fx, fy, cx, cy, znear, zfar;
    int W, H;          /* render resolution (× supersample) */
    double planes[5][4]; /* clip planes a·p + d ≥ 0 in camera space */
} Setup;

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static void lerp_vert(const ClipVert *a, const ClipVert *b, double t, ClipVert *o) {
    for (int k = 0; k < 3; k++) {
        o->p[k] = a->p[k] + t * (b->p[k] - a->p[k]);
        o->col[k] = a->col[k] + (float)t * (b->col[k] - a->col[k]);
        o->nrm[k] = a->nrm[k] + (float)t * (b->nrm[k] - a->nrm[k]);
    }
}

static double plane_dist(const double pl[4], const double p[3]) {
    return pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] + pl[3];
}

/* Sutherland–Hodgman against one plane. The crossing point of an edge is always computed from
 * its inside end towards its outside end, so the two triangles sharing an edge compute the
 * bit-identical point and stay watertight across the near plane. */
static int clip_plane(const ClipVert *in, int n, ClipVert *out, const double pl[4]) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        const ClipVert *a = &in[i], *b = &in[(i + 1) % n];
        double da = plane_dist(pl, a->p), db = plane_dist(pl, b->p);
        bool ia = da >= 0, ib = db >= 0;
        if (ia) out[m++] = *a;
        if (ia != ib) {
            const ClipVert *pi = ia ? a : b, *po = ia ? b : a;
            double di = ia ? da : db, dout = ia ? db : da;
            lerp_vert(pi, po, di / (di - dout), &out[m++]);
        }
    }
    return m;
}

static void norm3f(float v[3]) {
    float n = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (n > 0) v[0] /= n, v[1] /= n, v[2] /= n;
}

/* Face f into screen triangles; returns how many, writing them to out when out is not NULL. */
static int setup_face(const Setup *s, int64_t f, ScreenTri *out) {
    const DsMesh *m = s->m;
    const int32_t *idx = m->f + 3 * f;
    ClipVert v[3];
    for (int i = 0; i < 3; i++) {
        const float *w = m->v + 3 * (size_t)idx[i];
        if (!isfinite(w[0]) || !isfinite(w[1]) || !isfinite(w[2])) return 0;
        for (int r = 0; r < 3; r++)
            v[i].p[r] = s->R[3 * r] * w[0] + s->R[3 * r + 1] * w[1] + s->R[3 * r + 2] * w[2] + s->t[r];
        const float *c = m->color ? m->color + 3 * (size_t)idx[i] : s->o->color;
        memcpy(v[i].col, c, sizeof v[i].col);
    }
    /* everything beyond the far plane: nothing to draw */
    if (v[0].p[2] > s->zfar && v[1].p[2] > s->zfar && v[2].p[2] > s->zfar) return 0;
    double e1[3], e2[3], n[3], cen[3];
    for (int k = 0; k < 3; k++) {
        e1[k] = v[1].p[k] - v[0].p[k], e2[k] = v[2].p[k] - v[0].p[k];
        cen[k] = (v[0].p[k] + v[1].p[k] + v[2].p[k]) / 3;
    }
    n[0] = e1[1] * e2[2] - e1[2] * e2[1], n[1] = e1[2] * e2[0] - e1[0] * e2[2], n[2] = e1[0] * e2[1] - e1[1] * e2[0];
    /* the camera is at the origin: the face looks at it when its normal opposes the view ray */
    bool front = n[0] * cen[0] + n[1] * cen[1] + n[2] * cen[2] < 0;
    if (s->o->cull_backfaces && !front) return 0;
    if (s->vn) {
        /* vertex normals turned to face the viewer as a whole: back faces are lit like front
         * faces, and normals that disagree with the winding (a common file defect) still work */
        float sum = 0;
        for (int i = 0; i < 3; i++) {
            const float *w = s->vn + 3 * (size_t)idx[i];
            for (int r = 0; r < 3; r++)
                v[i].nrm[r] = (float)(s->R[3 * r] * w[0] + s->R[3 * r + 1] * w[1] + s->R[3 * r + 2] * w[2]);
            norm3f(v[i].nrm);
            sum += (float)(v[i].nrm[0] * cen[0] + v[i].nrm[1] * cen[1] + v[i].nrm[2] * cen[2]);
        }
        if (sum > 0)
            for (int i = 0; i < 3; i++)
                for (int r = 0; r < 3; r++) v[i].nrm[r] = -v[i].nrm[r];
    } else {
        double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(len > 0)) return 0; /* degenerate in 3D: no area on screen either */
        double sg = front ? 1 / len : -1 / len;
        for (int i = 0; i < 3; i++)
            for (int r = 0; r < 3; r++) v[i].nrm[r] = (float)(n[r] * sg);
    }

    /* clip: near plane first, so the guard-band planes (which assume z > 0) apply after it */
    ClipVert buf[2][MAX_CLIP];
    memcpy(buf[0], v, sizeof v);
    int nv = 3, cur = 0;
    for (int p = 0; p < 5; p++) {
        const double *pl = s->planes[p];
        int inside = 0;
        for (int i = 0; i < nv; i++) inside += plane_dist(pl, buf[cur][i].p) >= 0;
        if (inside == nv) continue;
        if (inside == 0) return 0;
        nv = clip_plane(buf[cur], nv, buf[1 - cur], pl);
        cur = 1 - cur;
        if (nv < 3) return 0;
    }
    const ClipVert *poly = buf[cur];

    int64_t X[MAX_CLIP], Y[MAX_CLIP];
    double U[MAX_CLIP], V[MAX_CLIP];
    float iz[MAX_CLIP];
    for (int i = 0; i < nv; i++) {
        double z = poly[i].p[2];
        double u = s->fx * poly[i].p[0] / z + s->cx, w = s->fy * poly[i].p[1] / z + s->cy;
        U[i] = u, V[i] = w;
        X[i] = llround(u * SUBPIX), Y[i] = llround(w * SUBPIX);
        iz[i] = (float)(1.0 / z);
    }
    /* fan triangulation of the clipped polygon (convex) */
    int count = 0;
    for (int k = 1; k + 1 < nv; k++) {
        int id[3] = {0, k, k + 1};
        int64_t area = (X[id[1]] - X[id[0]]) * (Y[id[2]] - Y[id[0]]) - (Y[id[1]] - Y[id[0]]) * (X[id[2]] - X[id[0]]);
        if (area == 0) continue;
        if (area < 0) { /* orient every triangle the same way so one inside test serves all */
            int tmp = id[1];
            id[1] = id[2], id[2] = tmp;
            area = -area;
        }
        int64_t xmin = X[id[0]], xmax = xmin, ymin = Y[id[0]], ymax = ymin;
        for (int i = 1; i < 3; i++) {
            if (X[id[i]] < xmin) xmin = X[id[i]];
            if (X[id[i]] > xmax) xmax = X[id[i]];
            if (Y[id[i]] < ymin) ymin = Y[id[i]];
            if (Y[id[i]] > ymax) ymax = Y[id[i]];
        }
        /* pixel i's center is at i·SUBPIX + SUBPIX/2 */
        int64_t px0 = floor_div(xmin - SUBPIX / 2 + SUBPIX - 1, SUBPIX), px1 = floor_div(xmax - SUBPIX / 2, SUBPIX);
        int64_t py0 = floor_div(ymin - SUBPIX / 2 + SUBPIX - 1, SUBPIX), py1 = floor_div(ymax - SUBPIX / 2, SUBPIX);
        if (px0 < 0) px0 = 0;
        if (py0 < 0) py0 = 0;
        if (px1 > s->W - 1) px1 = s->W - 1;
        if (py1 > s->H - 1) py1 = s->H - 1;
        if (px0 > px1 || py0 > py1) continue;
        if (out) {
            ScreenTri *t = &out[count];
            t->area = area;
            t->x0 = (int)px0, t->x1 = (int)px1, t->y0 = (int)py0, t->y1 = (int)py1;
            for (int i = 0; i < 3; i++) {
                const ClipVert *c = &poly[id[i]];
                t->X[i] = X[id[i]], t->Y[i] = Y[id[i]], t->iz[i] = iz[id[i]];
                t->u[i] = U[id[i]], t->v[i] = V[id[i]];
                memcpy(t->col[i], c->col, sizeof t->col[i]);
                memcpy(t->nrm[i], c->nrm, sizeof t->nrm[i]);
            }
            /* fall back to the snapped vertices when snapping changed the shape a lot (slivers):
             * the exact area could be ~0 there and blow up the interpolation */
            double ua = (t->u[1] - t->u[0]) * (t->v[2] - t->v[0]) - (t->v[1] - t->v[0]) * (t->u[2] - t->u[0]);
            double sa = (double)area / ((double)SUBPIX * SUBPIX);
            if (!(fabs(ua - sa) < 0.25 * sa))
                for (int i = 0; i < 3; i++) t->u[i] = (double)t->X[i] / SUBPIX, t->v[i] = (double)t->Y[i] / SUBPIX;
            else
                sa = ua;
            t->uv_area = sa;
        }
        count++;
    }
    return count;
}

/* Render-resolution buffers for one band's worth of work. */
typedef struct {
    float *rgb, *z;
    uint8_t *hit;
} Target;

static void raster_tri(const Setup *s, const ScreenTri *t, int ya, int yb, const float light[3], Target *tg) {
    const DsRasterOptions *o = s->o;
    int y0 = t->y0 > ya ? t->y0 : ya, y1 = t->y1 < yb ? t->y1 : yb;
    /* edge i runs from vertex i+1 to vertex i+2 and is zero on it; inside is E > 0. A pixel
     * center exactly on an edge is in when the point just right of it (then just below) is:
     * that is the top-left rule, and it gives a shared edge to exactly one of its triangles. */
    int64_t ax[3], ay[3], dx[3], dy[3], bias[3];
    for (int i = 0; i < 3; i++) {
        int a = (i + 1) % 3, b = (i + 2) % 3;
        ax[i] = t->X[a], ay[i] = t->Y[a];
        dx[i] = t->X[b] - t->X[a], dy[i] = t->Y[b] - t->Y[a];
        bias[i] = (dy[i] < 0 || (dy[i] == 0 && dx[i] > 0)) ? 1 : 0; /* E + bias > 0 ⇔ E > 0 or owned */
    }
    double inv_area = 1.0 / t->uv_area;
    for (int y = y0; y <= y1; y++) {
        int64_t py = (int64_t)y * SUBPIX + SUBPIX / 2, px = (int64_t)t->x0 * SUBPIX + SUBPIX / 2;
        int64_t E[3];
        for (int i = 0; i < 3; i++) E[i] = dx[i] * (py - ay[i]) - dy[i] * (px - ax[i]);
        for (int x = t->x0; x <= t->x1; x++) {
            if (x > t->x0)
                for (int i = 0; i < 3; i++) E[i] -= dy[i] * SUBPIX;
            if (E[0] + bias[0] <= 0 || E[1] + bias[1] <= 0 || E[2] + bias[2] <= 0) continue;
            /* screen barycentrics (on the unsnapped vertices), then weighted by 1/z for
             * perspective-correct attributes */
            double cu = x + 0.5, cv = y + 0.5, l[3];
            for (int i = 0; i < 3; i++) {
                int a = (i + 1) % 3, b = (i + 2) % 3;
                l[i] = ((t->u[b] - t->u[a]) * (cv - t->v[a]) - (t->v[b] - t->v[a]) * (cu - t->u[a])) * inv_area;
            }
            double w0 = l[0] * t->iz[0], w1 = l[1] * t->iz[1], w2 = l[2] * t->iz[2];
            double sw = w0 + w1 + w2;
            if (!(sw > 0)) continue;
            double z = 1.0 / sw;
            size_t p = (size_t)y * (size_t)s->W + (size_t)x;
            if (!(z < tg->z[p]) || z > s->zfar) continue;
            w0 /= sw, w1 /= sw, w2 /= sw;
            float col[3], nrm[3];
            for (int k = 0; k < 3; k++) {
                col[k] = (float)(w0 * t->col[0][k] + w1 * t->col[1][k] + w2 * t->col[2][k]);
                nrm[k] = (float)(w0 * t->nrm[0][k] + w1 * t->nrm[1][k] + w2 * t->nrm[2][k]);
            }
            float shade = 1.0f;
            if (!o->unlit) {
                norm3f(nrm);
                float l[3];
                if (o->light == DS_LIGHT_HEADLIGHT) {
                    /* towards the camera center from this point: −(camera-space position) */
                    double pu = ((double)x + 0.5 - s->cx) / s->fx * z, pv = ((double)y + 0.5 - s->cy) / s->fy * z;
                    l[0] = (float)-pu, l[1] = (float)-pv, l[2] = (float)-z;
                    norm3f(l);
                } else {
                    memcpy(l, light, sizeof l);
                }
                float ndl = nrm[0] * l[0] + nrm[1] * l[1] + nrm[2] * l[2];
                shade = o->ambient + o->diffuse * (ndl > 0 ? ndl : 0);
            }
            tg->z[p] = (float)z;
            tg->hit[p] = 1;
            for (int k = 0; k < 3; k++) tg->rgb[3 * p + (size_t)k] = col[k] * shade;
        }
    }
}

/* Angle-weighted vertex normals (Thürmer & Wüthrich 1998): each face adds its unit normal
 * times its corner angle, so the result does not depend on how a flat region is triangulated
 * (area weighting would tilt the normals at a cube's corners towards the split faces). */
static float *vertex_normals(const DsMesh *m) {
    float *vn = calloc((size_t)m->nv * 3, sizeof(float));
    if (!vn) return NULL;
    for (int64_t f = 0; f < m->nf; f++) {
        const int32_t *idx = m->f + 3 * f;
        const float *p[3] = {m->v + 3 * (size_t)idx[0], m->v + 3 * (size_t)idx[1], m->v + 3 * (size_t)idx[2]};
        double e1[3], e2[3], n[3];
        for (int k = 0; k < 3; k++) e1[k] = p[1][k] - p[0][k], e2[k] = p[2][k] - p[0][k];
        n[0] = e1[1] * e2[2] - e1[2] * e2[1], n[1] = e1[2] * e2[0] - e1[0] * e2[2], n[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        if (!(len > 0) || !isfinite(len)) continue;
        for (int i = 0; i < 3; i++) {
            const float *a = p[i], *b = p[(i + 1) % 3], *c = p[(i + 2) % 3];
            double ab[3], ac[3];
            for (int k = 0; k < 3; k++) ab[k] = b[k] - a[k], ac[k] = c[k] - a[k];
            double dot = ab[0] * ac[0] + ab[1] * ac[1] + ab[2] * ac[2];
            double angle = atan2(len, dot); /* |ab × ac| = len for every corner */
            for (int k = 0; k < 3; k++) vn[3 * (size_t)idx[i] + (size_t)k] += (float)(angle * n[k] / len);
        }
    }
    for (int64_t i = 0; i < m->nv; i++) norm3f(vn + 3 * i);
    return vn;
}

int ds_raster_render(const DsMesh *m, const DsCamera *cam, const DsRasterOptions *opts, DsRender *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    DsRasterOptions defaults = ds_raster_options_default();
    const DsRasterOptions *o = opts ? opts : &defaults;
    int ss = o->supersample;
    if (ss < 1 || ss > 16) return base_errf(err, errlen, "raster: supersample %d out of range (1..16)", ss);
    if (cam->width <= 0 || cam->height <= 0 || (int64_t)cam->width * ss > DS_IMAGE_MAX_SIDE ||
        (int64_t)cam->height * ss > DS_IMAGE_MAX_SIDE)
        return base_errf(err, errlen, "raster: image %d x %d (x%d supersampling) out of range (1..%d a side)", cam->width,
                         cam->height, ss, DS_IMAGE_MAX_SIDE);
    if (!(cam->fx > 0) || !(cam->fy > 0) || !isfinite(cam->fx) || !isfinite(cam->fy) || !isfinite(cam->cx) ||
        !isfinite(cam->cy))
        return base_errf(err, errlen, "raster: bad intrinsics fx %g fy %g cx %g cy %g", cam->fx, cam->fy, cam->cx,
                         cam->cy);
    if (!(cam->znear > 0) || !(cam->zfar > cam->znear))
        return base_errf(err, errlen, "raster: need 0 < znear < zfar, got znear %g zfar %g", cam->znear, cam->zfar);
    for (int64_t i = 0; i < 3 * m->nf; i++)
        if (m->f[i] < 0 || m->f[i] >= m->nv)
            return base_errf(err, errlen, "raster: face %lld has vertex index %d (mesh has %lld vertices)",
                             (long long)(i / 3), m->f[i], (long long)m->nv);

    Setup s = {.m = m, .o = o, .W = cam->width * ss, .H = cam->height * ss};
    memcpy(s.R, cam->R, sizeof s.R);
    memcpy(s.t, cam->t, sizeof s.t);
    s.fx = cam->fx * ss, s.fy = cam->fy * ss, s.cx = cam->cx * ss, s.cy = cam->cy * ss;
    s.znear = cam->znear, s.zfar = cam->zfar;
    /* near: z ≥ znear; guard band: −G ≤ u ≤ W + G and the same in v, with u = fx x/z + cx
     * multiplied through by z > 0 */
    double P[5][4] = {{0, 0, 1, -s.znear},
                      {s.fx, 0, s.cx + GUARD, 0},
                      {-s.fx, 0, s.W + GUARD - s.cx, 0},
                      {0, s.fy, s.cy + GUARD, 0},
                      {0, -s.fy, s.H + GUARD - s.cy, 0}};
    memcpy(s.planes, P, sizeof P);

    size_t npx = (size_t)s.W * (size_t)s.H;
    Target tg = {malloc(npx * 3 * sizeof(float)), malloc(npx * sizeof(float)), calloc(npx, 1)};
    float *vn_alloc = NULL;
    int64_t *first = calloc((size_t)m->nf + 1, sizeof *first);
    int nbands = (s.H + BAND - 1) / BAND;
    int64_t *band_start = calloc((size_t)nbands + 1, sizeof *band_start);
    ScreenTri *tris = NULL;
    int64_t *band_list = NULL;
    int rc = 0;
    if (!tg.rgb || !tg.z || !tg.hit || !first || !band_start) {
        rc = base_errf(err, errlen, "raster: out of memory for a %d x %d render", s.W, s.H);
        goto done;
    }
    if (o->normals == DS_NORMALS_VERTEX && !o->unlit) {
        if (m->n) s.vn = m->n;
        else if (m->nv > 0 && !(s.vn = vn_alloc = vertex_normals(m))) {
            rc = base_errf(err, errlen, "raster: out of memory for vertex normals");
            goto done;
        }
    }
    for (size_t p = 0; p < npx; p++) {
        tg.z[p] = INFINITY;
        for (int k = 0; k < 3; k++) tg.rgb[3 * p + (size_t)k] = o->background[k];
    }

    /* 1. setup: count, prefix sum, write — screen triangles stay in face order */
    float light[3] = {0, 0, 0};
    if (o->light == DS_LIGHT_DIRECTIONAL) {
        for (int r = 0; r < 3; r++)
            light[r] = (float)(s.R[3 * r] * o->light_dir[0] + s.R[3 * r + 1] * o->light_dir[1] +
                               s.R[3 * r + 2] * o->light_dir[2]);
        norm3f(light);
    }
    /* threads only pay off with enough work: a parallel region costs tens of microseconds, and
     * far more on a loaded machine, which small renders (tests, thumbnails) would feel
     * (base_par_threads: one thread below two grains of work) */
    int par_nt = base_par_threads(m->nf, 50);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t f = 0; f < m->nf; f++) first[f + 1] = setup_face(&s, f, NULL);
    for (int64_t f = 0; f < m->nf; f++) first[f + 1] += first[f];
    int64_t ntri = first[m->nf];
    tris = malloc((size_t)(ntri ? ntri : 1) * sizeof *tris);
    if (!tris) {
        rc = base_errf(err, errlen, "raster: out of memory for %lld triangles", (long long)ntri);
        goto done;
    }
    par_nt = base_par_threads(m->nf, 50);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int64_t f = 0; f < m->nf; f++) setup_face(&s, f, tris + first[f]);

    /* 2. binning into bands of rows */
    for (int64_t i = 0; i < ntri; i++)
        for (int b = tris[i].y0 / BAND; b <= tris[i].y1 / BAND; b++) band_start[b + 1]++;
    for (int b = 0; b < nbands; b++) band_start[b + 1] += band_start[b];
    band_list = malloc((size_t)(band_start[nbands] ? band_start[nbands] : 1) * sizeof *band_list);
    int64_t *fill = calloc((size_t)nbands, sizeof *fill);
    if (!band_list || !fill) {
        free(fill);
        rc = base_errf(err, errlen, "raster: out of memory for binning");
        goto done;
    }
    for (int64_t i = 0; i < ntri; i++)
        for (int b = tris[i].y0 / BAND; b <= tris[i].y1 / BAND; b++) band_list[band_start[b] + fill[b]++] = i;
    free(fill);

    /* 3. raster: a band belongs to one thread, so no two threads touch a pixel */
    par_nt = base_par_threads(nbands, (int64_t)(npx / (size_t)(nbands ? nbands : 1)) + 50 * ntri / (nbands ? nbands : 1));
#pragma omp parallel for schedule(dynamic, 1) num_threads(par_nt) if (par_nt > 1)
    for (int b = 0; b < nbands; b++) {
        int ya = b * BAND, yb = ya + BAND - 1 < s.H - 1 ? ya + BAND - 1 : s.H - 1;
        for (int64_t k = band_start[b]; k < band_start[b + 1]; k++) raster_tri(&s, &tris[band_list[k]], ya, yb, light, &tg);
    }

    /* resolve: box filter over the s × s samples of each pixel */
    int W = cam->width, H = cam->height;
    out->w = W, out->h = H;
    memcpy(out->background, o->background, sizeof out->background);
    out->rgb = malloc((size_t)W * (size_t)H * 3 * sizeof(float));
    out->depth = malloc((size_t)W * (size_t)H * sizeof(float));
    out->alpha = malloc((size_t)W * (size_t)H * sizeof(float));
    if (!out->rgb || !out->depth || !out->alpha) {
        ds_render_free(out);
        rc = base_errf(err, errlen, "raster: out of memory for a %d x %d image", W, H);
        goto done;
    }
    float inv = 1.0f / (float)(ss * ss);
    par_nt = base_par_threads(H, (int64_t)W * ss * ss * 5);
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float c[3] = {0, 0, 0}, zmin = INFINITY;
            int hits = 0;
            for (int j = 0; j < ss; j++)
                for (int i = 0; i < ss; i++) {
                    size_t p = (size_t)(y * ss + j) * (size_t)s.W + (size_t)(x * ss + i);
                    for (int k = 0; k < 3; k++) c[k] += tg.rgb[3 * p + (size_t)k];
                    hits += tg.hit[p];
                    if (tg.z[p] < zmin) zmin = tg.z[p];
                }
            size_t q = (size_t)y * (size_t)W + (size_t)x;
            for (int k = 0; k < 3; k++) out->rgb[3 * q + (size_t)k] = c[k] * inv;
            out->depth[q] = zmin;
            out->alpha[q] = (float)hits * inv;
        }

done:
    free(tg.rgb);
    free(tg.z);
    free(tg.hit);
    free(vn_alloc);
    free(first);
    free(band_start);
    free(band_list);
    free(tris);
    return rc;
}

int ds_render_to_image(const DsRender *r, bool with_alpha, DsImageF *out, char *err, size_t errlen) {
    if (ds_imagef_init(out, r->w, r->h, with_alpha ? 4 : 3, err, errlen)) return -1;
    /* c = a·fg + (1 − a)·bg  ⇒  fg = (c − (1 − a)·bg) / a; where a = 0 the color is irrelevant */
    const float *bg = r->background;
    size_t n = (size_t)r->w * (size_t)r->h;
    for (size_t p = 0; p < n; p++) {
        float *d = out->data + p * (size_t)out->channels;
        const float *c = r->rgb + 3 * p;
        if (!with_alpha) {
            memcpy(d, c, 3 * sizeof(float));
            continue;
        }
        float a = r->alpha[p];
        for (int k = 0; k < 3; k++) d[k] = a > 0 ? (c[k] - (1 - a) * bg[k]) / a : 0;
        d[3] = a;
    }
    return 0;
}

int ds_render_write_png(const char *path, const DsRender *r, bool with_alpha, char *err, size_t errlen) {
    DsImageF img;
    if (ds_render_to_image(r, with_alpha, &img, err, errlen)) return -1;
    int rc = ds_imagef_write(path, &img, err, errlen);
    ds_imagef_free(&img);
    return rc;
}
