/* models/gaussians/rasterize_cuda.cu — the CUDA backend of the tile rasterizer (raster_core.h's
 * GsRasterBackend over device arrays; algorithm: docs/gaussianimate.md §1, the tile
 * rasterizer of Kerbl et al. 2023 §6; rasterize_cpu.c is the reference it must match).
 *
 * Forward
 *  1. k_preprocess, one thread per Gaussian: gs_math.h's gs_preprocess (the CPU's very code, in
 *     f64: projection, conic, radius, α >= 1/255 box, tile rect, SH color, depth) → f32 splats
 *     packed as three float4, the tile rect and the number of tiles touched;
 *  2. cub::DeviceScan::InclusiveSum of the counts → each Gaussian's first key slot and the total;
 *  3. k_keys: one (tile << 32 | f32 depth bits) key per touched tile, value = Gaussian index;
 *  4. cub::DeviceRadixSort::SortPairs on bits [0, 32 + ceil(log2 tiles)) — stable, so equal keys
 *     keep the Gaussian order, as the CPU's LSD sort does;
 *  5. k_ranges: tile_start[t] = first sorted entry of tile t (every slot written once);
 *  6. k_render: one 16×16 block per tile, one thread per pixel; the tile's list is walked in
 *     batches of 256 splats fetched collaboratively into shared memory; front to back with the
 *     CPU's clamps (α <= 0.99, skip α < 1/255, stop before T < 1e-4); the block leaves as soon as
 *     every pixel is done. Keeps T_final and the last contributor per pixel.
 * Backward
 *  7. k_render_backward: one block per tile, the same batches back to front from the tile's
 *     largest last contributor; each pixel recovers T_i by division (as the CPU does) and forms its
 *     splat-gradient terms; per splat the 32 lanes of a warp are summed with __shfl_down_sync and
 *     lane 0 atomicAdds the 10 sums into an f32 (n × 10) buffer (warps where no lane touched the
 *     splat skip it: __any_sync);
 *  8. k_backward_gauss, one thread per Gaussian: gs_project + gs_project_backward (gs_math.h, f64)
 *     from the splat gradients to means, scales, quaternions, opacities, SH.
 *
 * Precision: per-Gaussian math in f64 (the inputs at the seam are f64), blending and the pixel
 * backward in f32; the atomics make the gradient sums order-dependent (not bitwise reproducible).
 * Memory: the state lives in st->alloc (the glue hands out scope-owned device memory); scratch
 * (counts, keys, CUB temp) comes from the backend's caching pool (cu_pool_alloc) and goes back to
 * it right after the launches that use it — safe because every launch here and in the tensor
 * backend is on the legacy default stream. All launches are on stream 0; the only host syncs are
 * the copy of the entry total (needed to size the key buffers) and the caller's own reads. */
#include <climits>
#include <cub/cub.cuh>

#include "tensor/cuda/cuda_kernels.h"

#include "gs_math.h"
#include "raster_core.h"

#define GS_BLOCK (GS_TILE * GS_TILE) /* threads per tile block = splats per shared batch */
#define GS_FULL_MASK 0xffffffffu
#define GS_PRE_THREADS 128 /* per-Gaussian kernels: large f64 frames, fewer threads a block */

struct GsCudaScratch { /* pool blocks of one call, released together */
    void *p[8];
    int n;
    void *get(size_t nbytes) {
        void *q = cu_pool_alloc(nbytes ? nbytes : 1);
        p[n++] = q;
        return q;
    }
    void release() {
        for (int k = 0; k < n; k++) cu_pool_release(p[k]);
        n = 0;
    }
};

/* ---- 1. preprocess ------------------------------------------------------------------------- */

static __global__ void k_preprocess(GsRasterInputs in, double3 cam, int tiles_x, int tiles_y, float4 *splat,
                             int32_t *radius, int4 *rect, int64_t *counts) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= in.n) return;
    double campos[3] = {cam.x, cam.y, cam.z}, sp[GS_SPLAT_N], ext[3];
    int rc[4];
    GsProj p;
    int r = gs_preprocess(&in, campos, tiles_x, tiles_y, i, &p, sp, ext, rc);
    radius[i] = r;
    rect[i] = make_int4(rc[0], rc[1], rc[2], rc[3]);
    counts[i] = (int64_t)(rc[1] - rc[0]) * (rc[3] - rc[2]);
    splat[3 * (size_t)i] = make_float4((float)sp[GS_SPLAT_MX], (float)sp[GS_SPLAT_MY], (float)sp[GS_SPLAT_O],
                                       (float)sp[GS_SPLAT_Z]);
    splat[3 * (size_t)i + 1] = make_float4((float)sp[GS_SPLAT_A], (float)sp[GS_SPLAT_B], (float)sp[GS_SPLAT_C], 0.f);
    splat[3 * (size_t)i + 2] = make_float4((float)sp[GS_SPLAT_R], (float)sp[GS_SPLAT_G], (float)sp[GS_SPLAT_BL], 0.f);
}

/* ---- 3. keys ------------------------------------------------------------------------------- */

/* Depths are > znear > 0: positive floats, whose bit patterns order like the values. The depth is
 * (float)z exactly as the CPU rounds it, so both sort identically. */
static __global__ void k_keys(int n, int tiles_x, const int4 *rect, const int64_t *incl, const float4 *splat, uint64_t *keys,
                       int32_t *vals) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int4 rc = rect[i];
    int64_t cnt = (int64_t)(rc.y - rc.x) * (rc.w - rc.z);
    if (cnt <= 0) return;
    int64_t k = incl[i] - cnt;
    uint64_t depth = __float_as_uint(splat[3 * (size_t)i].w);
    for (int y = rc.z; y < rc.w; y++)
        for (int x = rc.x; x < rc.y; x++, k++) {
            keys[k] = (uint64_t)(y * tiles_x + x) << 32 | depth;
            vals[k] = i;
        }
}

/* ---- 5. per-tile ranges -------------------------------------------------------------------- */

/* tile_start[t] = first entry whose tile is >= t, for t in [0, n_tiles]; entry e writes the slots
 * (tile(e − 1), tile(e)], the last entry also (tile(total − 1), n_tiles] — each slot once. */
static __global__ void k_ranges(int64_t total, int n_tiles, const uint64_t *keys, int64_t *tile_start) {
    CU_LOOP(e, total) {
        int t = (int)(keys[e] >> 32);
        int tp = e == 0 ? -1 : (int)(keys[e - 1] >> 32);
        for (int u = tp + 1; u <= t; u++) tile_start[u] = e;
        if (e == total - 1)
            for (int u = t + 1; u <= n_tiles; u++) tile_start[u] = total;
    }
}

/* ---- 6. render ----------------------------------------------------------------------------- */

#define GS_ALPHA_MAX_F ((float)GS_ALPHA_MAX)
#define GS_ALPHA_MIN_F ((float)GS_ALPHA_MIN)
#define GS_T_MIN_F ((float)GS_T_MIN)

static __global__ void __launch_bounds__(GS_BLOCK)
    k_render(int W, int H, int tiles_x, const int64_t *tile_start, const int32_t *entry_gauss, const float4 *splat,
             float3 bg, double *out, double *T_final, int32_t *n_contrib) {
    __shared__ float4 s_a[GS_BLOCK], s_b[GS_BLOCK], s_c[GS_BLOCK];
    int tile = blockIdx.y * tiles_x + blockIdx.x;
    int tid = threadIdx.y * GS_TILE + threadIdx.x;
    int px = blockIdx.x * GS_TILE + threadIdx.x, py = blockIdx.y * GS_TILE + threadIdx.y;
    bool inside = px < W && py < H;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    int64_t s0 = tile_start[tile];
    int len = (int)(tile_start[tile + 1] - s0);

    float T = 1.f, C0 = 0.f, C1 = 0.f, C2 = 0.f, D = 0.f;
    int last = 0;
    bool done = !inside;
    for (int base = 0; base < len; base += GS_BLOCK) {
        /* also the barrier that keeps the previous batch in shared memory until all have read it */
        if (__syncthreads_count(done) == GS_BLOCK) break;
        int k = base + tid;
        if (k < len) {
            size_t g = (size_t)entry_gauss[s0 + k];
            s_a[tid] = splat[3 * g];
            s_b[tid] = splat[3 * g + 1];
            s_c[tid] = splat[3 * g + 2];
        }
        __syncthreads();
        int cnt = min(GS_BLOCK, len - base);
        for (int j = 0; !done && j < cnt; j++) {
            float4 A = s_a[j], B = s_b[j];
            float dx = A.x - fx, dy = A.y - fy;
            float sig = 0.5f * (B.x * dx * dx + B.z * dy * dy) + B.y * dx * dy;
            if (sig < 0.f) continue;
            float a = fminf(GS_ALPHA_MAX_F, A.z * expf(-sig));
            if (a < GS_ALPHA_MIN_F) continue;
            float Tn = T * (1.f - a);
            if (Tn < GS_T_MIN_F) {
                done = true;
                break;
            }
            float w = a * T;
            float4 c = s_c[j];
            C0 += c.x * w, C1 += c.y * w, C2 += c.z * w;
            D += A.w * w;
            T = Tn;
            last = base + j + 1;
        }
    }
    if (!inside) return;
    size_t pix = (size_t)py * W + px;
    T_final[pix] = T;
    n_contrib[pix] = last;
    double *o = out + GS_OUT_N * pix;
    o[GS_OUT_R] = (double)C0 + (double)T * bg.x;
    o[GS_OUT_G] = (double)C1 + (double)T * bg.y;
    o[GS_OUT_B] = (double)C2 + (double)T * bg.z;
    o[GS_OUT_ALPHA] = 1.0 - (double)T;
    o[GS_OUT_DEPTH] = D;
}

/* ---- 7. pixel backward ----------------------------------------------------------------------- */

static __global__ void __launch_bounds__(GS_BLOCK)
    k_render_backward(int W, int H, int tiles_x, const int64_t *tile_start, const int32_t *entry_gauss,
                      const float4 *splat, float3 bg, const double *gout, const double *T_final,
                      const int32_t *n_contrib, float *gsplat) {
    __shared__ float4 s_a[GS_BLOCK], s_b[GS_BLOCK], s_c[GS_BLOCK];
    __shared__ int s_g[GS_BLOCK];
    __shared__ int s_kmax;
    int tile = blockIdx.y * tiles_x + blockIdx.x;
    int tid = threadIdx.y * GS_TILE + threadIdx.x, lane = tid & 31;
    int px = blockIdx.x * GS_TILE + threadIdx.x, py = blockIdx.y * GS_TILE + threadIdx.y;
    bool inside = px < W && py < H;
    float fx = (float)px + 0.5f, fy = (float)py + 0.5f;
    int64_t s0 = tile_start[tile];

    if (tid == 0) s_kmax = 0;
    __syncthreads();
    /* T walks back from T_final; S: color/depth accumulated behind the current splat; gbg: the
     * part of dL/dα_i common to every i (see rasterize_cpu.c's backward) */
    float T = 1.f, Tf = 1.f, gbg = 0.f, g0 = 0.f, g1 = 0.f, g2 = 0.f, gD = 0.f;
    float S0 = 0.f, S1 = 0.f, S2 = 0.f, S3 = 0.f;
    int last = 0;
    if (inside) {
        size_t pix = (size_t)py * W + px;
        const double *go = gout + GS_OUT_N * pix;
        T = Tf = (float)T_final[pix];
        last = n_contrib[pix];
        g0 = (float)go[GS_OUT_R], g1 = (float)go[GS_OUT_G], g2 = (float)go[GS_OUT_B], gD = (float)go[GS_OUT_DEPTH];
        gbg = (float)(bg.x * go[GS_OUT_R] + bg.y * go[GS_OUT_G] + bg.z * go[GS_OUT_B] - go[GS_OUT_ALPHA]);
        if (last > 0) atomicMax(&s_kmax, last);
    }
    __syncthreads();
    int kmax = s_kmax;

    for (int base = kmax; base > 0; base -= GS_BLOCK) {
        int cnt = min(GS_BLOCK, base);
        __syncthreads(); /* everyone is done with the previous batch */
        if (tid < cnt) {
            int k = base - 1 - tid; /* slot j holds entry base − 1 − j: back to front */
            int g = entry_gauss[s0 + k];
            s_g[tid] = g;
            s_a[tid] = splat[3 * (size_t)g];
            s_b[tid] = splat[3 * (size_t)g + 1];
            s_c[tid] = splat[3 * (size_t)g + 2];
        }
        __syncthreads();
        /* warp-uniform loop: every lane reaches the shuffles below for every j */
        for (int j = 0; j < cnt; j++) {
            int k = base - 1 - j;
            float v[GS_SPLAT_N];
#pragma unroll
            for (int m = 0; m < GS_SPLAT_N; m++) v[m] = 0.f;
            bool contrib = false;
            if (k < last) {
                float4 A = s_a[j], B = s_b[j];
                float dx = A.x - fx, dy = A.y - fy;
                float sig = 0.5f * (B.x * dx * dx + B.z * dy * dy) + B.y * dx * dy;
                float e = expf(-sig), a = A.z * e;
                bool clamped = a > GS_ALPHA_MAX_F;
                if (clamped) a = GS_ALPHA_MAX_F;
                if (sig >= 0.f && a >= GS_ALPHA_MIN_F) {
                    contrib = true;
                    float4 c = s_c[j];
                    float om = 1.f - a;
                    T = T / om; /* T_i, the transmittance in front of i */
                    float w = a * T, ga;
                    v[GS_SPLAT_R] = w * g0, v[GS_SPLAT_G] = w * g1, v[GS_SPLAT_BL] = w * g2;
                    v[GS_SPLAT_Z] = w * gD;
                    ga = (c.x - S0) * g0 + (c.y - S1) * g1 + (c.z - S2) * g2 + (A.w - S3) * gD;
                    S0 = a * c.x + om * S0, S1 = a * c.y + om * S1, S2 = a * c.z + om * S2, S3 = a * A.w + om * S3;
                    ga = T * ga - Tf / om * gbg;
                    if (!clamped) { /* α = 0.99 is flat in o and σ */
                        float gs = -a * ga;
                        v[GS_SPLAT_O] = e * ga;
                        v[GS_SPLAT_MX] = gs * (B.x * dx + B.y * dy);
                        v[GS_SPLAT_MY] = gs * (B.y * dx + B.z * dy);
                        v[GS_SPLAT_A] = gs * 0.5f * dx * dx;
                        v[GS_SPLAT_B] = gs * dx * dy;
                        v[GS_SPLAT_C] = gs * 0.5f * dy * dy;
                    }
                }
            }
            if (__any_sync(GS_FULL_MASK, contrib)) {
#pragma unroll
                for (int off = 16; off > 0; off >>= 1)
#pragma unroll
                    for (int m = 0; m < GS_SPLAT_N; m++) v[m] += __shfl_down_sync(GS_FULL_MASK, v[m], off);
                if (lane == 0) {
                    float *dst = gsplat + (size_t)GS_SPLAT_N * s_g[j];
#pragma unroll
                    for (int m = 0; m < GS_SPLAT_N; m++)
                        if (v[m] != 0.f) atomicAdd(dst + m, v[m]);
                }
            }
        }
    }
}

/* ---- 8. per-Gaussian backward ------------------------------------------------------------------ */

static __global__ void k_backward_gauss(GsRasterInputs in, double3 cam, const int32_t *radius, const float *gsplat,
                                 GsRasterGrads gr) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= in.n) return;
    int ns = in.isotropic ? 1 : 3, nc = 3 * in.sh_coeffs;
    double *gm = gr.means ? gr.means + 3 * (size_t)i : NULL, *gs = gr.scales ? gr.scales + (size_t)ns * i : NULL;
    double *gq = gr.quats ? gr.quats + 4 * (size_t)i : NULL, *go = gr.opacities ? gr.opacities + i : NULL;
    double *gc = gr.colors ? gr.colors + (size_t)nc * i : NULL;
    double g[GS_SPLAT_N];
    for (int m = 0; m < GS_SPLAT_N; m++) g[m] = gsplat[(size_t)GS_SPLAT_N * i + m];
    if (gr.mean2d) gr.mean2d[2 * (size_t)i] = g[GS_SPLAT_MX], gr.mean2d[2 * (size_t)i + 1] = g[GS_SPLAT_MY];
    double campos[3] = {cam.x, cam.y, cam.z};
    GsProj p;
    if (radius[i] > 0 && gs_project(&in, campos, i, &p) > 0) {
        gs_project_backward(&in, i, &p, g, gm, gs, gq, go, gc);
        return;
    }
    /* culled or off-screen: no pixel depends on it */
    if (gm) gm[0] = gm[1] = gm[2] = 0;
    if (gs)
        for (int k = 0; k < ns; k++) gs[k] = 0;
    if (gq) gq[0] = gq[1] = gq[2] = gq[3] = 0;
    if (go) go[0] = 0;
    if (gc)
        for (int k = 0; k < nc; k++) gc[k] = 0;
}

static __global__ void k_i32_to_i64(const int32_t *src, int64_t *dst, int n) {
    CU_LOOP(i, n) dst[i] = src[i];
}

/* ---- host side ------------------------------------------------------------------------------- */

static int grid_for(int n, int threads) { return (n + threads - 1) / threads; }

static double3 camera_center3(const GsRasterInputs *in) {
    double c[3];
    gs_camera_center(in, c);
    return make_double3(c[0], c[1], c[2]);
}

static void cuda_forward(const GsRasterInputs *in, GsRasterState *st, double *out) {
    const char *op = "gs_render (cuda forward)";
    int n = in->n, W = in->width, H = in->height;
    int tx_n = (W + GS_TILE - 1) / GS_TILE, ty_n = (H + GS_TILE - 1) / GS_TILE, n_tiles = tx_n * ty_n;
    size_t n1 = (size_t)(n ? n : 1), npix = (size_t)W * H;
    st->tiles_x = tx_n, st->tiles_y = ty_n;
    st->splat = NULL, st->extent = NULL;
    st->splat_f32 = (float *)st->alloc(st->alloc_user, sizeof(float4) * 3 * n1);
    st->radius = (int32_t *)st->alloc(st->alloc_user, sizeof(int32_t) * n1);
    st->tile_start = (int64_t *)st->alloc(st->alloc_user, sizeof(int64_t) * ((size_t)n_tiles + 1));
    st->T_final = (double *)st->alloc(st->alloc_user, sizeof(double) * npix);
    st->n_contrib = (int32_t *)st->alloc(st->alloc_user, sizeof(int32_t) * npix);
    float4 *splat = (float4 *)st->splat_f32;
    double3 cam = camera_center3(in);

    GsCudaScratch sc = {{0}, 0};
    int4 *rect = (int4 *)sc.get(sizeof(int4) * n1);
    int64_t *counts = (int64_t *)sc.get(sizeof(int64_t) * n1), *incl = (int64_t *)sc.get(sizeof(int64_t) * n1);
    int64_t total = 0;
    if (n > 0) {
        k_preprocess<<<grid_for(n, GS_PRE_THREADS), GS_PRE_THREADS>>>(*in, cam, tx_n, ty_n, splat, st->radius, rect,
                                                                       counts);
        cu_check(op, cudaGetLastError());
        size_t tb = 0;
        cu_check(op, cub::DeviceScan::InclusiveSum(NULL, tb, counts, incl, n));
        void *tmp = sc.get(tb);
        cu_check(op, cub::DeviceScan::InclusiveSum(tmp, tb, counts, incl, n));
        /* the one host sync of the forward: the key buffers are sized by the total */
        cu_check(op, cudaMemcpy(&total, incl + (n - 1), sizeof total, cudaMemcpyDeviceToHost));
    }
    if (total > INT_MAX) tensor_fail("gs_render", "%lld (tile, Gaussian) pairs: at most 2^31 - 1 on CUDA", (long long)total);
    st->n_entries = total;
    st->entry_gauss = (int32_t *)st->alloc(st->alloc_user, sizeof(int32_t) * (size_t)(total ? total : 1));
    if (total > 0) {
        uint64_t *keys = (uint64_t *)sc.get(sizeof(uint64_t) * (size_t)total);
        uint64_t *keys_sorted = (uint64_t *)sc.get(sizeof(uint64_t) * (size_t)total);
        int32_t *vals = (int32_t *)sc.get(sizeof(int32_t) * (size_t)total);
        k_keys<<<grid_for(n, CU_THREADS), CU_THREADS>>>(n, tx_n, rect, incl, splat, keys, vals);
        cu_check(op, cudaGetLastError());
        int tile_bits = 0;
        while ((1LL << tile_bits) < n_tiles) tile_bits++;
        int nitems = (int)total;
        size_t tb = 0;
        cu_check(op, cub::DeviceRadixSort::SortPairs(NULL, tb, keys, keys_sorted, vals, st->entry_gauss, nitems, 0,
                                                     32 + tile_bits));
        void *tmp = sc.get(tb);
        cu_check(op, cub::DeviceRadixSort::SortPairs(tmp, tb, keys, keys_sorted, vals, st->entry_gauss, nitems, 0,
                                                     32 + tile_bits));
        cu_launch(op, k_ranges, total, total, n_tiles, (const uint64_t *)keys_sorted, st->tile_start);
    } else {
        cu_check(op, cudaMemset(st->tile_start, 0, sizeof(int64_t) * ((size_t)n_tiles + 1)));
    }
    sc.release(); /* stream-ordered reuse: see the header comment */

    float3 bg = make_float3((float)in->bg[0], (float)in->bg[1], (float)in->bg[2]);
    k_render<<<dim3(tx_n, ty_n), dim3(GS_TILE, GS_TILE)>>>(W, H, tx_n, st->tile_start, st->entry_gauss, splat, bg, out,
                                                           st->T_final, st->n_contrib);
    cu_check(op, cudaGetLastError());
}

static void cuda_backward(const GsRasterInputs *in, const GsRasterState *st, const double *gout, GsRasterGrads *g) {
    const char *op = "gs_render (cuda backward)";
    int n = in->n;
    size_t n1 = (size_t)(n ? n : 1);
    GsCudaScratch sc = {{0}, 0};
    float *gsplat = (float *)sc.get(sizeof(float) * GS_SPLAT_N * n1);
    cu_check(op, cudaMemset(gsplat, 0, sizeof(float) * GS_SPLAT_N * n1));
    if (st->n_entries > 0) {
        float3 bg = make_float3((float)in->bg[0], (float)in->bg[1], (float)in->bg[2]);
        k_render_backward<<<dim3(st->tiles_x, st->tiles_y), dim3(GS_TILE, GS_TILE)>>>(
            in->width, in->height, st->tiles_x, st->tile_start, st->entry_gauss, (const float4 *)st->splat_f32, bg, gout,
            st->T_final, st->n_contrib, gsplat);
        cu_check(op, cudaGetLastError());
    }
    if (n > 0) {
        k_backward_gauss<<<grid_for(n, GS_PRE_THREADS), GS_PRE_THREADS>>>(*in, camera_center3(in), st->radius, gsplat, *g);
        cu_check(op, cudaGetLastError());
    }
    sc.release();
}

extern "C" void gs_cuda_radius_to_i64(const int32_t *src, int64_t *dst, int n) {
    cu_launch("gs_render (radii)", k_i32_to_i64, n, src, dst, n);
}

extern "C" const GsRasterBackend gs_raster_backend_cuda = {"cuda", cuda_forward, cuda_backward};
