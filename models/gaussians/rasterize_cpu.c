/* models/gaussians/rasterize_cpu.c — the CPU reference backend of the tile rasterizer
 * (gaussianimate.md §1; Kerbl et al. 2023 §6): per-Gaussian projection (gs_math.h), one
 * (tile << 32 | depth) key per tile a Gaussian's 3σ box touches, a radix sort (sort.c), then per
 * tile — in parallel with OpenMP, dynamic schedule — front-to-back alpha blending. Inside a tile
 * the loop runs Gaussian-outer over per-pixel state kept on the stack (T, C, depth, last, done),
 * visiting only the pixels of each Gaussian's α >= 1/255 box: every pixel still applies §1's
 * rule to its Gaussians in depth order (same results as the per-pixel loop), but the work is the
 * footprints' area instead of tile area × list length — the CPU stand-in for the GPU's
 * one-thread-per-pixel batches.
 *
 * The backward walks each pixel's list back to front from its last contributor, recovering the
 * transmittance by division, and sums the splat gradients per (tile, Gaussian) entry: an entry
 * belongs to one tile, hence to one thread, so there are no atomics, and the per-Gaussian sum
 * over entries afterwards is serial and in a fixed order — bitwise reproducible for any thread
 * count. Scratch memory is allocated per call and per thread, never per pixel. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/par.h"
#include "gs_math.h"
#include "raster_core.h"

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A tile's copy of one splat (the CPU analogue of a shared-memory batch), with the pixel box,
 * in tile-local coordinates [x0, x1) × [y0, y1), outside which α < 1/255 for sure: there
 * σ > sig_max = ln(255 o), the ellipse ½ dᵀQd <= sig_max having half-widths √(2 sig_max Σ'_xx),
 * √(2 sig_max Σ'_yy). The box is padded by a relative 1e-9, far above rounding and far below
 * a pixel, so visiting only the box changes no result; the exact α test still decides. */
typedef struct {
    double v[GS_SPLAT_N];
    double sig_max;
    int x0, x1, y0, y1;
} TileSplat;

typedef struct {
    int px0, py0, w, h; /* the tile's first pixel and size (clipped to the image) */
} TileGeom;

static int64_t gather_tile(const GsRasterInputs *in, const GsRasterState *st, int tile, TileSplat *buf, TileGeom *tg) {
    int tx_n = st->tiles_x;
    tg->px0 = (tile % tx_n) * GS_TILE, tg->py0 = (tile / tx_n) * GS_TILE;
    tg->w = in->width - tg->px0 < GS_TILE ? in->width - tg->px0 : GS_TILE;
    tg->h = in->height - tg->py0 < GS_TILE ? in->height - tg->py0 : GS_TILE;
    int64_t s0 = st->tile_start[tile], len = st->tile_start[tile + 1] - s0;
    for (int64_t k = 0; k < len; k++) {
        TileSplat *b = buf + k;
        int32_t gi = st->entry_gauss[s0 + k];
        memcpy(b->v, st->splat + (size_t)GS_SPLAT_N * gi, sizeof b->v);
        const double *ext = st->extent + 3 * (size_t)gi;
        b->sig_max = ext[0];
        /* pixels whose centers px0 + lx + 0.5 lie in [μ'x − ex, μ'x + ex] */
        double lo_x = ceil(b->v[GS_SPLAT_MX] - ext[1] - 0.5 - tg->px0), hi_x = floor(b->v[GS_SPLAT_MX] + ext[1] - 0.5 - tg->px0);
        double lo_y = ceil(b->v[GS_SPLAT_MY] - ext[2] - 0.5 - tg->py0), hi_y = floor(b->v[GS_SPLAT_MY] + ext[2] - 0.5 - tg->py0);
        if (lo_x < 0) lo_x = 0;
        if (lo_y < 0) lo_y = 0;
        if (hi_x > tg->w - 1) hi_x = tg->w - 1;
        if (hi_y > tg->h - 1) hi_y = tg->h - 1;
        b->x0 = b->x1 = b->y0 = b->y1 = 0;
        if (!(ext[0] >= 0) || hi_x < lo_x || hi_y < lo_y) continue;
        b->x0 = (int)lo_x, b->x1 = (int)hi_x + 1, b->y0 = (int)lo_y, b->y1 = (int)hi_y + 1;
    }
    return len;
}

static void cpu_forward(const GsRasterInputs *in, GsRasterState *st, double *out) {
    int n = in->n, W = in->width, H = in->height;
    int tx_n = (W + GS_TILE - 1) / GS_TILE, ty_n = (H + GS_TILE - 1) / GS_TILE, n_tiles = tx_n * ty_n;
    st->tiles_x = tx_n, st->tiles_y = ty_n;
    st->splat = st->alloc(st->alloc_user, sizeof(double) * GS_SPLAT_N * (size_t)(n ? n : 1));
    st->radius = st->alloc(st->alloc_user, sizeof(int32_t) * (size_t)(n ? n : 1));
    st->extent = st->alloc(st->alloc_user, sizeof(double) * 3 * (size_t)(n ? n : 1));
    int *rect = base_malloc(sizeof(int) * 4 * (size_t)n);
    int64_t *offs = base_malloc(sizeof(int64_t) * ((size_t)n + 1));
    double campos[3];
    gs_camera_center(in, campos);

    /* 1. project every Gaussian, count the tiles it touches */
    int par_nt = base_par_threads(n, 100); /* projection, 2D covariance, SH colour */
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int i = 0; i < n; i++) {
        GsProj p;
        double *sp = st->splat + (size_t)GS_SPLAT_N * i;
        int *rc = rect + 4 * i;
        int r = gs_preprocess(in, campos, tx_n, ty_n, i, &p, sp, st->extent + 3 * (size_t)i, rc);
        int64_t cnt = (int64_t)(rc[1] - rc[0]) * (rc[3] - rc[2]);
        st->radius[i] = r;
        offs[i] = cnt;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t c = offs[i];
        offs[i] = total;
        total += c;
    }
    offs[n] = total;
    st->n_entries = total;

    /* 2. keys (tile << 32 | depth bits), sorted: per tile, front to back */
    uint64_t *keys = base_malloc(sizeof(uint64_t) * 2 * (size_t)total);
    int32_t *vals = base_malloc(sizeof(int32_t) * 2 * (size_t)total);
    par_nt = base_par_threads(n, 2 * (total / (n ? n : 1) + 1));
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int i = 0; i < n; i++) {
        const int *rc = rect + 4 * i;
        int64_t k = offs[i];
        uint64_t depth = float_bits((float)st->splat[(size_t)GS_SPLAT_N * i + GS_SPLAT_Z]);
        for (int y = rc[2]; y < rc[3]; y++)
            for (int x = rc[0]; x < rc[1]; x++, k++) {
                keys[k] = (uint64_t)(y * tx_n + x) << 32 | depth;
                vals[k] = i;
            }
    }
    int tile_bits = 0;
    while ((1LL << tile_bits) < n_tiles) tile_bits++;
    gs_radix_sort(keys, vals, keys + total, vals + total, total, 32 + tile_bits);

    st->entry_gauss = st->alloc(st->alloc_user, sizeof(int32_t) * (size_t)(total ? total : 1));
    memcpy(st->entry_gauss, vals, sizeof(int32_t) * (size_t)total);
    st->tile_start = st->alloc(st->alloc_user, sizeof(int64_t) * ((size_t)n_tiles + 1));
    {
        int64_t e = 0;
        for (int t = 0; t <= n_tiles; t++) {
            while (e < total && (int64_t)(keys[e] >> 32) < t) e++;
            st->tile_start[t] = e;
        }
    }
    free(keys);
    free(vals);
    free(rect);
    free(offs);

    int64_t max_len = 0;
    for (int t = 0; t < n_tiles; t++)
        if (st->tile_start[t + 1] - st->tile_start[t] > max_len) max_len = st->tile_start[t + 1] - st->tile_start[t];

    /* 3. blend, one tile per task (gaussianimate.md §1 step 6) */
    st->T_final = st->alloc(st->alloc_user, sizeof(double) * (size_t)W * H);
    st->n_contrib = st->alloc(st->alloc_user, sizeof(int32_t) * (size_t)W * H);
    par_nt = base_par_threads(n_tiles, (total / (n_tiles ? n_tiles : 1) + 1) * GS_TILE * GS_TILE);
#pragma omp parallel num_threads(par_nt) if (par_nt > 1)
    {
        TileSplat *buf = base_malloc(sizeof(TileSplat) * (size_t)(max_len ? max_len : 1));
#pragma omp for schedule(dynamic, 1)
        for (int tile = 0; tile < n_tiles; tile++) {
            TileGeom tg;
            int64_t len = gather_tile(in, st, tile, buf, &tg);
            /* per-pixel state of the tile (row-major inside the tile) */
            double T[GS_TILE * GS_TILE], C[GS_TILE * GS_TILE][3], D[GS_TILE * GS_TILE];
            int32_t last[GS_TILE * GS_TILE];
            unsigned char done[GS_TILE * GS_TILE];
            int npix = tg.w * tg.h, n_done = 0;
            for (int p = 0; p < npix; p++) T[p] = 1, C[p][0] = C[p][1] = C[p][2] = 0, D[p] = 0, last[p] = 0, done[p] = 0;
            /* Gaussian-outer, front to back: each pixel still sees its Gaussians in depth order with
             * exactly the per-pixel rule of §1, but only the pixels of a Gaussian's α ≥ 1/255 box
             * are visited. */
            for (int64_t k = 0; k < len && n_done < npix; k++) {
                const TileSplat *g = buf + k;
                for (int ly = g->y0; ly < g->y1; ly++)
                    for (int lx = g->x0; lx < g->x1; lx++) {
                        int p = ly * tg.w + lx;
                        if (done[p]) continue;
                        double dx = g->v[GS_SPLAT_MX] - (tg.px0 + lx + 0.5), dy = g->v[GS_SPLAT_MY] - (tg.py0 + ly + 0.5);
                        double sig = 0.5 * (g->v[GS_SPLAT_A] * dx * dx + g->v[GS_SPLAT_C] * dy * dy) + g->v[GS_SPLAT_B] * dx * dy;
                        if (sig < 0 || sig > g->sig_max) continue;
                        double a = g->v[GS_SPLAT_O] * exp(-sig);
                        if (a > GS_ALPHA_MAX) a = GS_ALPHA_MAX;
                        if (a < GS_ALPHA_MIN) continue;
                        double Tn = T[p] * (1 - a);
                        if (Tn < GS_T_MIN) {
                            done[p] = 1, n_done++;
                            continue;
                        }
                        double w = a * T[p];
                        for (int c = 0; c < 3; c++) C[p][c] += g->v[GS_SPLAT_R + c] * w;
                        D[p] += g->v[GS_SPLAT_Z] * w;
                        T[p] = Tn;
                        last[p] = (int32_t)(k + 1);
                    }
            }
            for (int ly = 0; ly < tg.h; ly++)
                for (int lx = 0; lx < tg.w; lx++) {
                    int p = ly * tg.w + lx;
                    size_t pix = (size_t)(tg.py0 + ly) * W + tg.px0 + lx;
                    st->T_final[pix] = T[p];
                    st->n_contrib[pix] = last[p];
                    double *o = out + GS_OUT_N * pix;
                    for (int c = 0; c < 3; c++) o[c] = C[p][c] + T[p] * in->bg[c];
                    o[GS_OUT_ALPHA] = 1 - T[p];
                    o[GS_OUT_DEPTH] = D[p];
                }
        }
        free(buf);
    }
}

static void cpu_backward(const GsRasterInputs *in, const GsRasterState *st, const double *gout, GsRasterGrads *gr) {
    int n = in->n, W = in->width, n_tiles = st->tiles_x * st->tiles_y;
    int64_t total = st->n_entries;
    double *eg = base_calloc((size_t)total * GS_SPLAT_N, sizeof(double)); /* per-entry splat gradients */
    int64_t max_len = 0;
    for (int t = 0; t < n_tiles; t++)
        if (st->tile_start[t + 1] - st->tile_start[t] > max_len) max_len = st->tile_start[t + 1] - st->tile_start[t];
    const double *bg = in->bg;

    int par_nt = base_par_threads(n_tiles, (total / (n_tiles ? n_tiles : 1) + 1) * 2 * GS_TILE * GS_TILE);
#pragma omp parallel num_threads(par_nt) if (par_nt > 1)
    {
        TileSplat *buf = base_malloc(sizeof(TileSplat) * (size_t)(max_len ? max_len : 1));
#pragma omp for schedule(dynamic, 1)
        for (int tile = 0; tile < n_tiles; tile++) {
            TileGeom tg;
            int64_t len = gather_tile(in, st, tile, buf, &tg);
            double *teg = eg + (size_t)GS_SPLAT_N * st->tile_start[tile];
            int npix = tg.w * tg.h;
            /* per pixel: T walks back from T_final; S, SD: color / depth accumulated behind the
             * current Gaussian, normalized by the transmittance just behind it; gbg: the part of
             * dL/dα_i common to all i, −T_final/(1 − α_i) (bg·dL/dC − dL/dA) without the factor */
            double T[GS_TILE * GS_TILE], S[GS_TILE * GS_TILE][4], Tf[GS_TILE * GS_TILE], gbg[GS_TILE * GS_TILE];
            int32_t last[GS_TILE * GS_TILE], kmax = 0;
            const double *go[GS_TILE * GS_TILE];
            for (int ly = 0; ly < tg.h; ly++)
                for (int lx = 0; lx < tg.w; lx++) {
                    int p = ly * tg.w + lx;
                    size_t pix = (size_t)(tg.py0 + ly) * W + tg.px0 + lx;
                    go[p] = gout + GS_OUT_N * pix;
                    Tf[p] = T[p] = st->T_final[pix];
                    last[p] = st->n_contrib[pix];
                    if (last[p] > kmax) kmax = last[p];
                    S[p][0] = S[p][1] = S[p][2] = S[p][3] = 0;
                    gbg[p] = bg[0] * go[p][0] + bg[1] * go[p][1] + bg[2] * go[p][2] - go[p][GS_OUT_ALPHA];
                }
            (void)npix, (void)len;
            /* back to front (gaussianimate.md §1, backward); each pixel only from its last contributor */
            for (int64_t k = kmax - 1; k >= 0; k--) {
                const TileSplat *g = buf + k;
                double acc[GS_SPLAT_N] = {0};
                for (int ly = g->y0; ly < g->y1; ly++)
                    for (int lx = g->x0; lx < g->x1; lx++) {
                        int p = ly * tg.w + lx;
                        if (k >= last[p]) continue;
                        double dx = g->v[GS_SPLAT_MX] - (tg.px0 + lx + 0.5), dy = g->v[GS_SPLAT_MY] - (tg.py0 + ly + 0.5);
                        double sig = 0.5 * (g->v[GS_SPLAT_A] * dx * dx + g->v[GS_SPLAT_C] * dy * dy) + g->v[GS_SPLAT_B] * dx * dy;
                        if (sig < 0 || sig > g->sig_max) continue;
                        double e = exp(-sig), a = g->v[GS_SPLAT_O] * e;
                        int clamped = a > GS_ALPHA_MAX;
                        if (clamped) a = GS_ALPHA_MAX;
                        if (a < GS_ALPHA_MIN) continue;
                        T[p] /= 1 - a; /* T_i, the transmittance in front of i */
                        const double *gp = go[p];
                        double w = a * T[p], ga = 0;
                        for (int c = 0; c < 3; c++) {
                            acc[GS_SPLAT_R + c] += w * gp[c];
                            ga += (g->v[GS_SPLAT_R + c] - S[p][c]) * gp[c];
                            S[p][c] = a * g->v[GS_SPLAT_R + c] + (1 - a) * S[p][c];
                        }
                        acc[GS_SPLAT_Z] += w * gp[GS_OUT_DEPTH];
                        ga += (g->v[GS_SPLAT_Z] - S[p][3]) * gp[GS_OUT_DEPTH];
                        S[p][3] = a * g->v[GS_SPLAT_Z] + (1 - a) * S[p][3];
                        ga = T[p] * ga - Tf[p] / (1 - a) * gbg[p];
                        if (clamped) continue; /* α = 0.99 is flat in o and σ */
                        /* α = o e^{−σ}: dα/do = e^{−σ}, dα/dσ = −α; σ = ½(a dx² + c dy²) + b dx dy, d = μ' − p */
                        acc[GS_SPLAT_O] += e * ga;
                        double gs = -a * ga;
                        acc[GS_SPLAT_MX] += gs * (g->v[GS_SPLAT_A] * dx + g->v[GS_SPLAT_B] * dy);
                        acc[GS_SPLAT_MY] += gs * (g->v[GS_SPLAT_B] * dx + g->v[GS_SPLAT_C] * dy);
                        acc[GS_SPLAT_A] += gs * 0.5 * dx * dx;
                        acc[GS_SPLAT_B] += gs * dx * dy;
                        acc[GS_SPLAT_C] += gs * 0.5 * dy * dy;
                    }
                for (int j = 0; j < GS_SPLAT_N; j++) teg[GS_SPLAT_N * k + j] = acc[j];
            }
        }
        free(buf);
    }

    /* per-Gaussian sums of the entry gradients, in entry order */
    double *g2 = base_calloc((size_t)n * GS_SPLAT_N, sizeof(double));
    for (int64_t e = 0; e < total; e++) {
        double *d = g2 + (size_t)GS_SPLAT_N * st->entry_gauss[e];
        const double *s = eg + (size_t)GS_SPLAT_N * e;
        for (int k = 0; k < GS_SPLAT_N; k++) d[k] += s[k];
    }
    free(eg);

    double campos[3];
    gs_camera_center(in, campos);
    int ns = in->isotropic ? 1 : 3, nc = 3 * in->sh_coeffs;
    par_nt = base_par_threads(n, 200); /* one Gaussian's backward projection and SH */
#pragma omp parallel for schedule(static) num_threads(par_nt) if (par_nt > 1)
    for (int i = 0; i < n; i++) {
        double *gm = gr->means ? gr->means + 3 * (size_t)i : NULL, *gs = gr->scales ? gr->scales + ns * (size_t)i : NULL;
        double *gq = gr->quats ? gr->quats + 4 * (size_t)i : NULL, *go = gr->opacities ? gr->opacities + i : NULL;
        double *gc = gr->colors ? gr->colors + (size_t)nc * i : NULL;
        const double *g = g2 + (size_t)GS_SPLAT_N * i;
        if (gr->mean2d) gr->mean2d[2 * i] = g[GS_SPLAT_MX], gr->mean2d[2 * i + 1] = g[GS_SPLAT_MY];
        GsProj p;
        if (st->radius[i] > 0 && gs_project(in, campos, i, &p) > 0) {
            gs_project_backward(in, i, &p, g, gm, gs, gq, go, gc);
            continue;
        }
        /* culled or off-screen: no pixel depends on it */
        if (gm) memset(gm, 0, sizeof(double) * 3);
        if (gs) memset(gs, 0, sizeof(double) * ns);
        if (gq) memset(gq, 0, sizeof(double) * 4);
        if (go) go[0] = 0;
        if (gc) memset(gc, 0, sizeof(double) * nc);
    }
    free(g2);
}

const GsRasterBackend gs_raster_backend_cpu = {"cpu", cpu_forward, cpu_backward};
