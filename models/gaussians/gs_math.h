/* models/gaussians/gs_math.h — per-Gaussian math of the rasterizer, forward and hand-written
 * backward: activation of the raw parameters, camera transform, EWA projection of the 3D
 * covariance to the image (Zwicker et al. 2001, as used by Kerbl et al. 2023), the conic and
 * the screen radius, and the view-dependent color from real spherical harmonics. Plain C on
 * doubles with no allocation; compiled by nvcc, every function is also a device function
 * (GS_HD), so the CUDA backend (rasterize_cuda.cu) runs this very code per Gaussian.
 * Equations: docs/gaussianimate.md §1, forward steps 1–4 and the backward paragraph. */
#ifndef ANIMA_MODELS_GAUSSIANS_GS_MATH_H
#define ANIMA_MODELS_GAUSSIANS_GS_MATH_H

#include <math.h>
#include <string.h>

#include "raster_core.h"

/* host and device under nvcc, plain static inline in C */
#ifdef __CUDACC__
#define GS_HD __host__ __device__
#else
#define GS_HD
#endif

/* Real SH constants (the standard normalization used by 3DGS / Plenoxels; degree 0..3). The
 * degree-2 and -3 tables are locals of gs_sh_basis: a file-scope host array is not readable
 * from device code. */
#define GS_SH_C0 0.28209479177387814
#define GS_SH_C1 0.4886025119029199

/* The basis Y_k(d) for k < (deg + 1)² at a unit direction d, and when dY is not NULL its partial
 * derivatives with respect to d's components (taken as free variables; the caller chains them
 * through d = v / |v|). Polynomials in Cartesian form, as 3DGS evaluates them. */
GS_HD static inline void gs_sh_basis(int deg, const double d[3], double Y[GS_SH_MAX], double dY[GS_SH_MAX][3]) {
    const double gs_sh_c2[5] = {1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792,
                                0.5462742152960396};
    const double gs_sh_c3[7] = {-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154,
                                -0.4570457994644658, 1.445305721320277, -0.5900435899266435};
    double x = d[0], y = d[1], z = d[2];
    Y[0] = GS_SH_C0;
    if (dY) dY[0][0] = dY[0][1] = dY[0][2] = 0;
    if (deg < 1) return;
    Y[1] = -GS_SH_C1 * y, Y[2] = GS_SH_C1 * z, Y[3] = -GS_SH_C1 * x;
    if (dY) {
        memset(dY[1], 0, sizeof(double) * 9);
        dY[1][1] = -GS_SH_C1, dY[2][2] = GS_SH_C1, dY[3][0] = -GS_SH_C1;
    }
    if (deg < 2) return;
    double xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
    const double *c2 = gs_sh_c2, *c3 = gs_sh_c3;
    Y[4] = c2[0] * xy;
    Y[5] = c2[1] * yz;
    Y[6] = c2[2] * (2 * zz - xx - yy);
    Y[7] = c2[3] * xz;
    Y[8] = c2[4] * (xx - yy);
    if (dY) {
        double t[5][3] = {{c2[0] * y, c2[0] * x, 0},
                          {0, c2[1] * z, c2[1] * y},
                          {-2 * c2[2] * x, -2 * c2[2] * y, 4 * c2[2] * z},
                          {c2[3] * z, 0, c2[3] * x},
                          {2 * c2[4] * x, -2 * c2[4] * y, 0}};
        memcpy(dY[4], t, sizeof t);
    }
    if (deg < 3) return;
    Y[9] = c3[0] * y * (3 * xx - yy);
    Y[10] = c3[1] * xy * z;
    Y[11] = c3[2] * y * (4 * zz - xx - yy);
    Y[12] = c3[3] * z * (2 * zz - 3 * xx - 3 * yy);
    Y[13] = c3[4] * x * (4 * zz - xx - yy);
    Y[14] = c3[5] * z * (xx - yy);
    Y[15] = c3[6] * x * (xx - 3 * yy);
    if (dY) {
        double t[7][3] = {{6 * c3[0] * xy, c3[0] * (3 * xx - 3 * yy), 0},
                          {c3[1] * yz, c3[1] * xz, c3[1] * xy},
                          {-2 * c3[2] * xy, c3[2] * (4 * zz - xx - 3 * yy), 8 * c3[2] * yz},
                          {-6 * c3[3] * xz, -6 * c3[3] * yz, c3[3] * (6 * zz - 3 * xx - 3 * yy)},
                          {c3[4] * (4 * zz - 3 * xx - yy), -2 * c3[4] * xy, 8 * c3[4] * xz},
                          {2 * c3[5] * xz, -2 * c3[5] * yz, c3[5] * (xx - yy)},
                          {c3[6] * (3 * xx - 3 * yy), -6 * c3[6] * xy, 0}};
        memcpy(dY[9], t, sizeof t);
    }
}

/* Everything the forward computes for one Gaussian that its backward reuses. */
typedef struct {
    double t[3];        /* camera-space mean t = W μ + t_cam (step 1) */
    double s[3];        /* activated scales exp(raw) (s[0] only when isotropic) */
    double qn[4], qlen; /* normalized quaternion and |raw q| */
    double Rq[9];       /* rotation of qn */
    double M[9];        /* Rq · diag(s): Σ = M Mᵀ */
    double Sig[9];      /* 3D covariance */
    double rx, ry;      /* t_x/t_z, t_y/t_z after the field-of-view clamp (J only, step 2) */
    int rx_in, ry_in;   /* 1 when the clamp was inactive (the ratio's gradient passes) */
    double Tm[6];       /* J W, 2×3 */
    double cov[4];      /* Σ' = J W Σ Wᵀ Jᵀ + d I, 2×2 (step 3) */
    double Q[4];        /* conic Σ'⁻¹ */
    double mean2d[2];   /* μ' (step 4) */
    double o;           /* sigmoid(raw opacity) */
    double dir[3], dlen; /* unit view direction camera center → μ, and the distance */
    double Y[GS_SH_MAX];
    double rgb[3];
    int rgb_pos[3];     /* 1 where the pre-clamp color was > 0 (max(0, ·) passes the gradient) */
    int radius;         /* ceil(3 √λ_max(Σ')), 0 when culled */
} GsProj;

GS_HD static inline double gs_sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

/* Forward steps 1–4 and the color for Gaussian i; returns the radius (0: culled — behind the
 * near plane or a degenerate Σ'). campos: camera center in world coordinates (−Rᵀ t). */
GS_HD static inline int gs_project(const GsRasterInputs *in, const double campos[3], int i, GsProj *p) {
    const double *mu = in->means + 3 * i, *W = in->R;
    p->radius = 0;
    for (int r = 0; r < 3; r++) p->t[r] = W[3 * r] * mu[0] + W[3 * r + 1] * mu[1] + W[3 * r + 2] * mu[2] + in->t[r];
    double tx = p->t[0], ty = p->t[1], tz = p->t[2];
    if (!(tz > in->znear)) return 0;

    /* Σ = (R S)(R S)ᵀ from the normalized quaternion and the exp-activated scales; isotropic
     * Gaussians (the paper's choice) have Σ = s² I. */
    if (in->isotropic) {
        double s = exp(in->scales[i]);
        p->s[0] = s;
        memset(p->Sig, 0, sizeof p->Sig);
        p->Sig[0] = p->Sig[4] = p->Sig[8] = s * s;
    } else {
        const double *q = in->quats + 4 * i;
        p->qlen = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int k = 0; k < 4; k++) p->qn[k] = q[k] / p->qlen;
        double w = p->qn[0], x = p->qn[1], y = p->qn[2], z = p->qn[3];
        double *R = p->Rq;
        R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
        R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
        R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
        for (int k = 0; k < 3; k++) p->s[k] = exp(in->scales[3 * i + k]);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) p->M[3 * r + c] = R[3 * r + c] * p->s[c];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                p->Sig[3 * r + c] = p->M[3 * r] * p->M[3 * c] + p->M[3 * r + 1] * p->M[3 * c + 1] +
                                    p->M[3 * r + 2] * p->M[3 * c + 2];
    }

    /* Step 2: the local affine approximation of the projection (EWA, Zwicker et al. 2001 eq. 29),
     * with t_x/t_z, t_y/t_z clamped to 1.3× the image's extent seen from the camera, so Gaussians
     * far off-screen do not get huge footprints. The clamp acts on J only, not on μ'. */
    double limx_lo = -GS_FOV_CLAMP * in->cx / in->fx, limx_hi = GS_FOV_CLAMP * (in->width - in->cx) / in->fx;
    double limy_lo = -GS_FOV_CLAMP * in->cy / in->fy, limy_hi = GS_FOV_CLAMP * (in->height - in->cy) / in->fy;
    double rx = tx / tz, ry = ty / tz;
    p->rx_in = rx >= limx_lo && rx <= limx_hi;
    p->ry_in = ry >= limy_lo && ry <= limy_hi;
    p->rx = rx < limx_lo ? limx_lo : rx > limx_hi ? limx_hi : rx;
    p->ry = ry < limy_lo ? limy_lo : ry > limy_hi ? limy_hi : ry;
    double J[6] = {in->fx / tz, 0, -in->fx * p->rx / tz, 0, in->fy / tz, -in->fy * p->ry / tz};
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) p->Tm[3 * r + c] = J[3 * r] * W[c] + J[3 * r + 1] * W[3 + c] + J[3 * r + 2] * W[6 + c];

    /* Step 3: Σ' = T Σ Tᵀ + d I (the dilation d, 0.3 px² by default, is the screen-space
     * low-pass filter of EWA splatting: every splat covers at least about a pixel). */
    double TS[6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            TS[3 * r + c] = p->Tm[3 * r] * p->Sig[c] + p->Tm[3 * r + 1] * p->Sig[3 + c] + p->Tm[3 * r + 2] * p->Sig[6 + c];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++)
            p->cov[2 * r + c] = TS[3 * r] * p->Tm[3 * c] + TS[3 * r + 1] * p->Tm[3 * c + 1] + TS[3 * r + 2] * p->Tm[3 * c + 2];
    p->cov[0] += in->dilation, p->cov[3] += in->dilation;
    p->cov[1] = p->cov[2] = 0.5 * (p->cov[1] + p->cov[2]); /* exactly symmetric */
    double det = p->cov[0] * p->cov[3] - p->cov[1] * p->cov[1];
    if (!(det > 0)) return 0;
    p->Q[0] = p->cov[3] / det, p->Q[1] = p->Q[2] = -p->cov[1] / det, p->Q[3] = p->cov[0] / det;

    /* Step 4: radius from the larger eigenvalue (3σ), pixel mean by the pinhole model. */
    double mid = 0.5 * (p->cov[0] + p->cov[3]), disc = mid * mid - det;
    double lam = mid + sqrt(disc > 0.1 ? disc : 0.1);
    p->mean2d[0] = in->fx * tx / tz + in->cx;
    p->mean2d[1] = in->fy * ty / tz + in->cy;
    p->o = gs_sigmoid(in->opacities[i]);

    /* Color: plain RGB is used as given; SH are evaluated along the unit direction from the
     * camera center to the mean, shifted by 0.5 and clamped at 0 (3DGS convention). */
    const double *col = in->colors + (size_t)i * in->sh_coeffs * 3;
    if (in->sh_degree < 0) {
        for (int c = 0; c < 3; c++) p->rgb[c] = col[c], p->rgb_pos[c] = 1;
    } else {
        double v[3] = {mu[0] - campos[0], mu[1] - campos[1], mu[2] - campos[2]};
        p->dlen = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        for (int k = 0; k < 3; k++) p->dir[k] = v[k] / p->dlen;
        gs_sh_basis(in->sh_degree, p->dir, p->Y, NULL);
        for (int c = 0; c < 3; c++) {
            double acc = 0.5;
            for (int k = 0; k < in->sh_coeffs; k++) acc += p->Y[k] * col[3 * k + c];
            p->rgb_pos[c] = acc > 0;
            p->rgb[c] = acc > 0 ? acc : 0;
        }
    }
    double r = ceil(3 * sqrt(lam));
    p->radius = r < 1e7 ? (int)r : 10000000; /* a 3σ box far beyond any image */
    return p->radius;
}

/* Backward of gs_project for a visible Gaussian: from the gradients of its splat quantities
 * g[GS_SPLAT_N] (dL/dμ', dL/d(a, b, c), dL/do, dL/drgb, dL/dz) to the raw inputs. Each output
 * pointer addresses this Gaussian's row (NULL: not needed) and is overwritten. */
GS_HD static inline void gs_project_backward(const GsRasterInputs *in, int i, const GsProj *p, const double g[GS_SPLAT_N],
                                       double *g_mean, double *g_scale, double *g_quat, double *g_opac,
                                       double *g_color) {
    const double *W = in->R;
    double tx = p->t[0], ty = p->t[1], tz = p->t[2], fx = in->fx, fy = in->fy;
    const double *col = in->colors + (size_t)i * in->sh_coeffs * 3;
    double gm[3] = {0, 0, 0};

    if (g_opac) g_opac[0] = g[GS_SPLAT_O] * p->o * (1 - p->o); /* sigmoid' = o (1 − o) */

    /* color → SH coefficients and, through the view direction, the mean */
    double grgb[3];
    for (int c = 0; c < 3; c++) grgb[c] = p->rgb_pos[c] ? g[GS_SPLAT_R + c] : 0;
    if (in->sh_degree < 0) {
        if (g_color)
            for (int c = 0; c < 3; c++) g_color[c] = grgb[c];
    } else {
        if (g_color)
            for (int k = 0; k < in->sh_coeffs; k++)
                for (int c = 0; c < 3; c++) g_color[3 * k + c] = p->Y[k] * grgb[c];
        if (in->sh_degree > 0) {
            double Y[GS_SH_MAX], dY[GS_SH_MAX][3], gd[3] = {0, 0, 0};
            gs_sh_basis(in->sh_degree, p->dir, Y, dY);
            for (int k = 1; k < in->sh_coeffs; k++) {
                double w = col[3 * k] * grgb[0] + col[3 * k + 1] * grgb[1] + col[3 * k + 2] * grgb[2];
                for (int a = 0; a < 3; a++) gd[a] += dY[k][a] * w;
            }
            /* d = v/|v|: dd/dv = (I − d dᵀ)/|v| */
            double dot = gd[0] * p->dir[0] + gd[1] * p->dir[1] + gd[2] * p->dir[2];
            for (int a = 0; a < 3; a++) gm[a] += (gd[a] - p->dir[a] * dot) / p->dlen;
        }
    }

    /* conic → Σ': Q = Σ'⁻¹, dL/dΣ' = −Q (dL/dQ) Q. σ = ½ dᵀ Q d reads b = Q01 = Q10 once as
     * b dx dy, so the symmetric dL/dQ carries dL/db / 2 off the diagonal. */
    double GQ[4] = {g[GS_SPLAT_A], 0.5 * g[GS_SPLAT_B], 0.5 * g[GS_SPLAT_B], g[GS_SPLAT_C]}, QG[4], Gc[4];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) QG[2 * r + c] = p->Q[2 * r] * GQ[c] + p->Q[2 * r + 1] * GQ[2 + c];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) Gc[2 * r + c] = -(QG[2 * r] * p->Q[c] + QG[2 * r + 1] * p->Q[2 + c]);

    /* Σ' = T Σ Tᵀ (+0.3 I): dL/dT = 2 G T Σ, dL/dΣ = Tᵀ G T (G, Σ symmetric) */
    double TS[6], GT[6], GSig[9], GTm[6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            TS[3 * r + c] = p->Tm[3 * r] * p->Sig[c] + p->Tm[3 * r + 1] * p->Sig[3 + c] + p->Tm[3 * r + 2] * p->Sig[6 + c];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            GTm[3 * r + c] = 2 * (Gc[2 * r] * TS[c] + Gc[2 * r + 1] * TS[3 + c]);
            GT[3 * r + c] = Gc[2 * r] * p->Tm[c] + Gc[2 * r + 1] * p->Tm[3 + c]; /* G T */
        }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) GSig[3 * r + c] = p->Tm[r] * GT[c] + p->Tm[3 + r] * GT[3 + c];

    /* T = J W: dL/dJ = dL/dT Wᵀ; J depends on t (step 2) */
    double GJ[6];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) GJ[3 * r + c] = GTm[3 * r] * W[3 * c] + GTm[3 * r + 1] * W[3 * c + 1] + GTm[3 * r + 2] * W[3 * c + 2];
    double gt[3] = {0, 0, 0};
    /* J00 = fx/tz, J11 = fy/tz; J02 = −fx rx/tz with rx = clamp(tx/tz): unclamped it is −fx tx/tz²
     * (∂/∂tx = −fx/tz², ∂/∂tz = 2 fx rx/tz²), clamped ∂/∂tx = 0 and ∂/∂tz = fx rx/tz². */
    gt[2] += -fx / (tz * tz) * GJ[0] - fy / (tz * tz) * GJ[4];
    gt[0] += p->rx_in ? -fx / (tz * tz) * GJ[2] : 0;
    gt[2] += (p->rx_in ? 2 : 1) * fx * p->rx / (tz * tz) * GJ[2];
    gt[1] += p->ry_in ? -fy / (tz * tz) * GJ[5] : 0;
    gt[2] += (p->ry_in ? 2 : 1) * fy * p->ry / (tz * tz) * GJ[5];
    /* μ' = (fx tx/tz + cx, fy ty/tz + cy) */
    double gmx = g[GS_SPLAT_MX], gmy = g[GS_SPLAT_MY];
    gt[0] += fx / tz * gmx;
    gt[1] += fy / tz * gmy;
    gt[2] += -fx * tx / (tz * tz) * gmx - fy * ty / (tz * tz) * gmy;
    gt[2] += g[GS_SPLAT_Z]; /* the depth output reads z = t_z */
    /* t = W μ + t_cam */
    for (int a = 0; a < 3; a++) gm[a] += W[a] * gt[0] + W[3 + a] * gt[1] + W[6 + a] * gt[2];
    if (g_mean)
        for (int a = 0; a < 3; a++) g_mean[a] = gm[a];

    if (in->isotropic) {
        /* Σ = s² I, s = exp(raw): dL/draw = 2 s² tr(dL/dΣ) */
        if (g_scale) g_scale[0] = 2 * p->s[0] * p->s[0] * (GSig[0] + GSig[4] + GSig[8]);
        return;
    }
    /* Σ = M Mᵀ: dL/dM = 2 G M; M = R diag(s) */
    double GM[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            GM[3 * r + c] = 2 * (GSig[3 * r] * p->M[c] + GSig[3 * r + 1] * p->M[3 + c] + GSig[3 * r + 2] * p->M[6 + c]);
    if (g_scale)
        for (int c = 0; c < 3; c++)
            g_scale[c] = (p->Rq[c] * GM[c] + p->Rq[3 + c] * GM[3 + c] + p->Rq[6 + c] * GM[6 + c]) * p->s[c];
    if (!g_quat) return;
    double G[9];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) G[3 * r + c] = GM[3 * r + c] * p->s[c];
    double w = p->qn[0], x = p->qn[1], y = p->qn[2], z = p->qn[3], gq[4];
    /* ∂R/∂(w, x, y, z) of the unit-quaternion rotation matrix, contracted with dL/dR */
    gq[0] = 2 * (-z * G[1] + y * G[2] + z * G[3] - x * G[5] - y * G[6] + x * G[7]);
    gq[1] = 2 * (y * G[1] + z * G[2] + y * G[3] - 2 * x * G[4] - w * G[5] + z * G[6] + w * G[7] - 2 * x * G[8]);
    gq[2] = 2 * (-2 * y * G[0] + x * G[1] + w * G[2] + x * G[3] + z * G[5] - w * G[6] + z * G[7] - 2 * y * G[8]);
    gq[3] = 2 * (-2 * z * G[0] - w * G[1] + x * G[2] + w * G[3] - 2 * z * G[4] + y * G[5] + x * G[6] + y * G[7]);
    /* q̂ = q/|q|: dL/dq = (dL/dq̂ − q̂ (q̂·dL/dq̂)) / |q| */
    double dot = gq[0] * w + gq[1] * x + gq[2] * y + gq[3] * z;
    for (int k = 0; k < 4; k++) g_quat[k] = (gq[k] - p->qn[k] * dot) / p->qlen;
}

/* Camera center in world coordinates, −Rᵀ t. */
GS_HD static inline void gs_camera_center(const GsRasterInputs *in, double c[3]) {
    for (int a = 0; a < 3; a++) c[a] = -(in->R[a] * in->t[0] + in->R[3 + a] * in->t[1] + in->R[6 + a] * in->t[2]);
}

/* sig_max and the half-widths (ex, ey) of the α >= 1/255 box of a splat sp[GS_SPLAT_N]: outside
 * it σ > sig_max = ln(255 o), so α < 1/255; the ellipse ½ dᵀQd <= sig_max has half-widths
 * √(2 sig_max Σ'_xx), √(2 sig_max Σ'_yy). Padded by a relative 1e-9 (far above rounding, far
 * below a pixel). sig_max < 0 when o < 1/255 (never visible). */
GS_HD static inline void gs_alpha_extent(const double *sp, double ext[3]) {
    double o = sp[GS_SPLAT_O], A = sp[GS_SPLAT_A], B = sp[GS_SPLAT_B], C = sp[GS_SPLAT_C];
    double det = A * C - B * B, thr = o > 0 ? log(255.0 * o) : -1;
    ext[0] = -1, ext[1] = ext[2] = 0;
    if (!(thr >= 0) || !(det > 0)) return;
    ext[0] = thr * (1 + 1e-9) + 1e-12;
    ext[1] = sqrt(2 * ext[0] * C / det) * (1 + 1e-9) + 1e-9;
    ext[2] = sqrt(2 * ext[0] * A / det) * (1 + 1e-9) + 1e-9;
}

/* Tiles whose pixels' centers (i + 0.5, j + 0.5) fall inside the box μ' ± half: [x0, x1) × [y0, y1)
 * as rect = {x0, x1, y0, y1}. Empty when the box misses the image. */
GS_HD static inline void gs_tile_rect(const GsRasterInputs *in, int tiles_x, int tiles_y, const double m[2],
                                      const double half[2], int rect[4]) {
    double lo[2], hi[2];
    int lim[2] = {in->width, in->height}, nt[2] = {tiles_x, tiles_y};
    for (int a = 0; a < 2; a++) {
        lo[a] = ceil(m[a] - half[a] - 0.5);  /* first pixel index inside */
        hi[a] = floor(m[a] + half[a] - 0.5); /* last */
        if (lo[a] < 0) lo[a] = 0;
        if (hi[a] > lim[a] - 1) hi[a] = lim[a] - 1;
        if (hi[a] < lo[a]) {
            rect[0] = rect[1] = rect[2] = rect[3] = 0;
            return;
        }
        rect[2 * a] = (int)lo[a] / GS_TILE;
        rect[2 * a + 1] = (int)hi[a] / GS_TILE + 1;
        if (rect[2 * a + 1] > nt[a]) rect[2 * a + 1] = nt[a];
    }
}

/* The splat quantities of a projected Gaussian (raster_core.h's GS_SPLAT_* layout). */
GS_HD static inline void gs_splat_from_proj(const GsProj *p, double sp[GS_SPLAT_N]) {
    sp[GS_SPLAT_MX] = p->mean2d[0], sp[GS_SPLAT_MY] = p->mean2d[1];
    sp[GS_SPLAT_A] = p->Q[0], sp[GS_SPLAT_B] = p->Q[1], sp[GS_SPLAT_C] = p->Q[3];
    sp[GS_SPLAT_O] = p->o;
    for (int c = 0; c < 3; c++) sp[GS_SPLAT_R + c] = p->rgb[c];
    sp[GS_SPLAT_Z] = p->t[2];
}

/* Preprocess of Gaussian i shared by the backends: project, fill sp, ext (gs_alpha_extent) and
 * the tile rect of the α >= 1/255 box clipped to the 3σ square μ' ± r (§1 step 5: the tiles the
 * 3σ square touches, less those where it cannot contribute). Returns the radius, 0 when culled
 * or touching no tile (rect then empty). */
GS_HD static inline int gs_preprocess(const GsRasterInputs *in, const double campos[3], int tiles_x, int tiles_y,
                                      int i, GsProj *p, double sp[GS_SPLAT_N], double ext[3], int rect[4]) {
    int r = gs_project(in, campos, i, p);
    rect[0] = rect[1] = rect[2] = rect[3] = 0;
    gs_splat_from_proj(p, sp);
    ext[0] = -1, ext[1] = ext[2] = 0;
    if (r > 0) {
        gs_alpha_extent(sp, ext);
        double half[2] = {ext[1] < r ? ext[1] : r, ext[2] < r ? ext[2] : r};
        if (ext[0] >= 0) gs_tile_rect(in, tiles_x, tiles_y, p->mean2d, half, rect);
    }
    long long cnt = (long long)(rect[1] - rect[0]) * (rect[3] - rect[2]);
    return cnt > 0 ? r : 0;
}

#endif
