/* tests/test_sim_energy.c — the step objective's energy terms (sim/solver.h: SimTerm), each
 * against central finite differences of its value (the gradient) and of its gradient (the
 * Hessian), and their sum against the objective (the IPC barrier's derivatives are
 * test_sim_world.c's sim_barrier_derivatives_match_fd); and the one neo-Hookean law
 * (base/neohookean.h): PhysSkin's tensor Ψ and its autograd P equal the
 * simulator's sim_snh on random F, J near zero and negative included. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models/physskin/losses.h"
#include "sim/material.h"
#include "sim/skinning.h"
#include "sim/solver.h"
#include "tests/test.h"

static double urand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* a 0.6 × 0.3 × 0.3 box: cubature points on a 4³ grid, corner binding vertices, RBF weights */
static void small_box(SimObject *o) {
    const int m = 3, res = 4;
    const double half[3] = {0.3, 0.15, 0.15};
    SimSkinning sk;
    memset(&sk, 0, sizeof sk);
    sk.m = m, sk.nc = res * res * res, sk.nv = 8;
    sk.cub_x = malloc(sizeof(double) * 3 * (size_t)sk.nc);
    sk.cub_vol = malloc(sizeof(double) * (size_t)sk.nc);
    sk.cub_w = malloc(sizeof(double) * (size_t)(sk.nc * m));
    sk.cub_dw = malloc(sizeof(double) * 3 * (size_t)(sk.nc * m));
    sk.vert_x = malloc(sizeof(double) * 3 * 8);
    sk.vert_w = malloc(sizeof(double) * 8 * (size_t)m);
    for (int64_t c = 0; c < sk.nc; c++) {
        int64_t ijk[3] = {c % res, (c / res) % res, c / (res * res)};
        for (int i = 0; i < 3; i++) sk.cub_x[3 * c + i] = -half[i] + (ijk[i] + 0.5) * 2 * half[i] / res;
        sk.cub_vol[c] = 8 * half[0] * half[1] * half[2] / (double)sk.nc;
    }
    for (int v = 0; v < 8; v++)
        for (int i = 0; i < 3; i++) sk.vert_x[3 * v + i] = (v >> i & 1) ? half[i] : -half[i];
    double centers[9] = {-0.2, 0, 0.05, 0.1, 0.05, -0.05, 0.25, -0.1, 0};
    sim_rbf_eval(m, centers, 0.35, sk.nc, sk.cub_x, sk.cub_w, sk.cub_dw);
    sim_rbf_eval(m, centers, 0.35, 8, sk.vert_x, sk.vert_w, NULL);
    SimMaterial mat = {.E = 2e4, .nu = 0.3, .rho = 1000};
    SimPose pose = sim_pose_identity();
    pose.translate[1] = 0.1;
    char err[256];
    int rc = sim_object_init(o, &sk, &mat, &pose, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    sim_skinning_free(&sk);
}

/* every term of the objective present: gravity, a force field, a drag, a penalty region, a
 * floor the box sinks into */
static void controlled_box(SimObject *o) {
    small_box(o);
    char err[256];
    o->gravity[1] = -9.81;
    SimForceField ff = {.region = {.kind = SIM_REGION_BOX, .lo = {0, -1, -1}, .hi = {1, 1, 1}},
                        .accel = {1.5, 0, -0.5}, .t0 = 0, .t1 = 1};
    SimDrag dr = {.grab = {0.2, 0.2, 0}, .radius = 0.1, .stiffness = 500, .target = {0.3, 0.3, 0},
                  .t0 = 0, .t1 = 0.2, .t_release = 1};
    SimDirichlet dd = {.region = {.kind = SIM_REGION_BOX, .lo = {-1, -1, -1}, .hi = {-0.2, 1, 1}},
                       .velocity = {0.1, 0, 0}, .penalty = true, .stiffness = 1e3};
    SimPlane pl = {.normal = {0, 1, 0}, .offset = 0.0, .stiffness = 1e4};
    CHECK(sim_object_add_force(o, &ff, err, sizeof err) == 0);
    CHECK(sim_object_add_drag(o, &dr, err, sizeof err) == 0);
    CHECK(sim_object_add_dirichlet(o, &dd, err, sizeof err) == 0);
    CHECK(sim_object_add_plane(o, &pl, err, sizeof err) == 0);
    o->no_projection = true; /* the exact elastic Hessian, for the finite differences */
    CHECK_MSG(sim_object_prepare(o, err, sizeof err) == 0, "%s", err);
}

static const char *term_name[SIM_NTERMS] = {"inertia", "elastic", "gravity", "drag", "dirichlet", "planes"};

TEST(sim_energy_terms_match_fd) {
    SimObject o;
    controlled_box(&o);
    int64_t n = o.n;
    uint64_t s = 11;
    double *z = malloc(sizeof(double) * (size_t)n), *zt = malloc(sizeof(double) * (size_t)n);
    double *g = malloc(sizeof(double) * (size_t)n), *gp = malloc(sizeof(double) * (size_t)n);
    double *gm = malloc(sizeof(double) * (size_t)n), *H = malloc(sizeof(double) * (size_t)(n * n));
    double *gsum = calloc((size_t)n, sizeof(double)), *gobj = malloc(sizeof(double) * (size_t)n);
    /* the box pushed 0.12 m down (into the floor) and deformed */
    for (int64_t k = 0; k < n; k++) z[k] = 0.05 * (2 * urand(&s) - 1), zt[k] = z[k] + 0.02 * (2 * urand(&s) - 1);
    z[o.nb + o.nb - 1] -= 0.12; /* the constant handle's translation, y */
    const double t = 0.1, dt = 0.01, h = 1e-6;
    double Esum = 0;
    for (int term = 0; term < SIM_NTERMS; term++) {
        double E = sim_object_term(&o, (SimTerm)term, z, zt, t, g, H);
        CHECK_MSG(isfinite(E), "%s: E = %g", term_name[term], E);
        CHECK_MSG(E != 0 || term == SIM_TERM_GRAVITY, "%s: zero energy, nothing checked", term_name[term]);
        double sc = term == SIM_TERM_INERTIA ? 1 : dt * dt;
        Esum += sc * E;
        for (int64_t k = 0; k < n; k++) gsum[k] += sc * g[k];
        double gmax = 1e-300, gerr = 0, hmax = 1e-300, herr = 0;
        for (int64_t k = 0; k < n; k++) gmax = fmax(gmax, fabs(g[k]));
        for (int64_t k = 0; k < n; k++) {
            double zk = z[k];
            z[k] = zk + h;
            double ep = sim_object_term(&o, (SimTerm)term, z, zt, t, gp, NULL);
            z[k] = zk - h;
            double em = sim_object_term(&o, (SimTerm)term, z, zt, t, gm, NULL);
            z[k] = zk;
            gerr = fmax(gerr, fabs(g[k] - (ep - em) / (2 * h)));
            for (int64_t a = 0; a < n; a++) {
                herr = fmax(herr, fabs(H[a * n + k] - (gp[a] - gm[a]) / (2 * h)));
                hmax = fmax(hmax, fabs(H[a * n + k]));
            }
        }
        CHECK_MSG(gerr <= 1e-6 * gmax, "%s: gradient vs FD %g (scale %g)", term_name[term], gerr, gmax);
        CHECK_MSG(herr <= 1e-5 * hmax, "%s: Hessian vs FD %g (scale %g)", term_name[term], herr, hmax);
        /* the Hessian is symmetric */
        double asym = 0;
        for (int64_t a = 0; a < n; a++)
            for (int64_t b = 0; b < a; b++) asym = fmax(asym, fabs(H[a * n + b] - H[b * n + a]));
        CHECK_MSG(asym <= 1e-12 * hmax, "%s: asymmetric Hessian %g", term_name[term], asym);
    }
    /* the objective is inertia + dt² (the rest) */
    double Eobj = sim_object_objective(&o, z, zt, dt, t, gobj, NULL);
    CHECK_MSG(fabs(Eobj - Esum) <= 1e-12 * fabs(Eobj), "objective %.17g vs the terms' sum %.17g", Eobj, Esum);
    double gx = 0, gd = 0;
    for (int64_t k = 0; k < n; k++) gx = fmax(gx, fabs(gobj[k])), gd = fmax(gd, fabs(gobj[k] - gsum[k]));
    CHECK_MSG(gd <= 1e-12 * gx, "objective gradient vs the terms' %g (scale %g)", gd, gx);
    free(z), free(zt), free(g), free(gp), free(gm), free(H), free(gsum), free(gobj);
    sim_object_free(&o);
}

/* one law: PhysSkin's tensor Ψ and autograd P (f64) against the simulator's scalar sim_snh */
TEST(sim_neohookean_is_physskins_law) {
    double mu, lam;
    SimMaterial mat = {.E = 5e4, .nu = 0.3, .rho = 1000};
    sim_lame(&mat, &mu, &lam);
    double mu2, lam2;
    base_lame(mat.E, mat.nu, true, &mu2, &lam2);
    CHECK(mu == mu2 && lam == lam2);
    enum { NF = 64 };
    double Fs[NF * 9];
    uint64_t s = 3;
    for (int f = 0; f < NF; f++) {
        double *F = Fs + 9 * f, amp = f < 16 ? 0.2 : f < 32 ? 1.0 : 2.0;
        for (int a = 0; a < 9; a++) F[a] = (a % 4 == 0) + amp * (2 * urand(&s) - 1);
        if (f >= 48) { /* J near 0 (f < 56) or negative: scale the last row so det F hits a target */
            double c0 = F[4] * F[8] - F[5] * F[7], c1 = F[5] * F[6] - F[3] * F[8], c2 = F[3] * F[7] - F[4] * F[6];
            double J = F[0] * c0 + F[1] * c1 + F[2] * c2, target = f < 56 ? 1e-6 * (f - 52) : -0.1 * (f - 55);
            /* det is linear in the first row: add a multiple of the cofactor row */
            double cc = c0 * c0 + c1 * c1 + c2 * c2, x = (target - J) / cc;
            F[0] += x * c0, F[1] += x * c1, F[2] += x * c2;
        }
    }
    Tensor *F = tensor_requires_grad(tensor_from_f64(TENSOR_SHAPE(NF, 3, 3), TENSOR_F64, Fs), true);
    Tensor *psi = ps_psi_neohookean(F, mu, lam);
    Tensor *tot = tensor_sum_all(psi), *P = NULL;
    ag_grad(1, &tot, NULL, 1, &F, &P, false);
    CHECK(P != NULL);
    const double *pt = tensor_f64(tensor_contiguous(psi)), *Pt = tensor_f64(tensor_contiguous(P));
    int neg = 0;
    for (int f = 0; f < NF; f++) {
        double Ps[9], *Fi = Fs + 9 * f;
        double ps = sim_snh(Fi, mu, lam, Ps, NULL);
        double J = Fi[0] * (Fi[4] * Fi[8] - Fi[5] * Fi[7]) - Fi[1] * (Fi[3] * Fi[8] - Fi[5] * Fi[6]) +
                   Fi[2] * (Fi[3] * Fi[7] - Fi[4] * Fi[6]);
        neg += J < 0;
        /* roundoff: the terms' size, μ|F|² + λ(J − 1)² + μ|J − 1| */
        double f2 = 0;
        for (int a = 0; a < 9; a++) f2 += Fi[a] * Fi[a];
        double scale = mu * f2 + lam * (J - 1) * (J - 1) + mu * fabs(J - 1);
        CHECK_MSG(fabs(pt[f] - ps) <= 1e-12 * scale, "F %d (J %g): Ψ tensor %.17g vs sim %.17g", f, J, pt[f], ps);
        double pmax = 0, perr = 0;
        for (int a = 0; a < 9; a++) pmax = fmax(pmax, fabs(Ps[a])), perr = fmax(perr, fabs(Pt[9 * f + a] - Ps[a]));
        double pscale = fmax(pmax, mu * sqrt(f2));
        CHECK_MSG(perr <= 1e-12 * pscale, "F %d (J %g): P autograd vs sim differ by %g (scale %g)", f, J, perr, pscale);
    }
    CHECK(neg >= 8);
}
