/* sim/secondary.c — physics secondary motion on top of a bone animation (secondary.h) */
#include "sim/secondary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "sim/bindings.h"
#include "sim/rig.h"
#include "sim/rig_lbs.h"

/* the bone transforms at frame position s ∈ [0, Q − 1], linear between frames (u_r is linear in
 * them, so the rig's points move on the animation's own path through every frame) */
static void pose_at(const float *tb, int Q, int B, double s, double *T) {
    if (s < 0) s = 0;
    if (s > Q - 1) s = Q - 1;
    int f0 = (int)floor(s), f1 = f0 < Q - 1 ? f0 + 1 : f0;
    double a = s - f0;
    for (int k = 0; k < B * 12; k++) T[k] = (1 - a) * tb[(int64_t)f0 * B * 12 + k] + a * tb[(int64_t)f1 * B * 12 + k];
}

int sim_secondary_motion(const SimSkinning *sk, int64_t np, const float *rig_rest, const float *rig_weights, int B, int Q,
                         const float *tb, int64_t n, const float *rest, float *pos, const SimSecondaryOptions *opt,
                         SimSecondaryResult *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char e2[4096];
    SimObject o = {0};
    SimLbsRig rig = {0};
    SimBinding bind = {0};
    SimRigPoints rp = {0};
    double *P = NULL, *Xobj = NULL, *w = NULL, *dw = NULL, *x = NULL, *T = NULL, *ke = NULL;
    int rc = -1;
    SimPose pose = sim_pose_identity();
    pose.scale = 1 / sk->scale;
    memcpy(pose.translate, sk->center, sizeof pose.translate);
    if (sim_object_init(&o, sk, &opt->material, &pose, e2, sizeof e2)) {
        base_errf(err, errlen, "%s", e2);
        goto done;
    }
    memcpy(o.gravity, opt->gravity, sizeof o.gravity);
    P = malloc(sizeof(double) * 3 * (size_t)np), Xobj = malloc(sizeof(double) * 3 * (size_t)(n + 1));
    w = malloc(sizeof(double) * (size_t)((n + 1) * sk->m)), dw = malloc(sizeof(double) * 3 * (size_t)((n + 1) * sk->m));
    x = malloc(sizeof(double) * 3 * (size_t)(n + 1)), T = malloc(sizeof(double) * 12 * (size_t)B);
    int64_t nsteps = (int64_t)(Q > 1 ? Q - 1 : 0) * opt->substeps;
    ke = malloc(sizeof(double) * 2 * (size_t)(nsteps + 1));
    if (!P || !Xobj || !w || !dw || !x || !T || !ke) {
        base_errf(err, errlen, "out of memory");
        goto done;
    }
    for (int64_t k = 0; k < 3 * np; k++) P[k] = rig_rest[k];
    if (sim_lbs_rig_init(&rig, &o, np, P, rig_weights, B, e2, sizeof e2)) {
        base_errf(err, errlen, "%s", e2);
        goto done;
    }
    rig.rotation_only = !opt->rig_strain;
    /* the Gaussians bound at their rest centers, in the skinning's frame */
    for (int64_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) Xobj[3 * i + a] = ((double)rest[3 * i + a] - sk->center[a]) * sk->scale;
    if (sim_skinning_interpolate(sk, n, Xobj, w, dw) ||
        sim_binding_init(&bind, &o, &pose, n, Xobj, w, dw, e2, sizeof e2)) {
        base_errf(err, errlen, "binding the Gaussians: %s", e2);
        goto done;
    }
    /* the Gaussians' rows projected as the object's were: they see B_comp (sim/rig.h) */
    if (sim_lbs_rig_points(&rig, n, bind.X, &rp, e2, sizeof e2)) {
        base_errf(err, errlen, "%s", e2);
        goto done;
    }
    sim_rig_points_project(&rig.rig, &rp, bind.X, bind.nb, bind.B, bind.G);
    /* the rig at rest before the first frame, then substeps per frame; frame 0 has z = 0 */
    double dt = 1.0 / (opt->fps * (double)opt->substeps), bz_max = 0, ke_max = 0, proj_max = 0;
    int failures = 0;
    int64_t iters = 0, step = 0;
    pose_at(tb, Q, B, 0, T);
    sim_lbs_rig_advance(&rig, &o, T);
    ke[0] = 0, ke[nsteps + 1] = 0;
    for (int t = 1; t < Q; t++) {
        for (int64_t s = 1; s <= opt->substeps; s++) {
            pose_at(tb, Q, B, (t - 1) + (double)s / (double)opt->substeps, T);
            sim_lbs_rig_advance(&rig, &o, T);
            if (opt->secondary && sim_object_step(&o, dt, e2, sizeof e2)) {
                base_errf(err, errlen, "frame %d: %s", t, e2);
                goto done;
            }
            step++;
            failures += o.last.failures, iters += o.last.iters;
            ke[step] = sim_object_energy(&o).kinetic, ke[nsteps + 1 + step] = (double)step * dt;
            ke_max = fmax(ke_max, ke[step]);
            if (opt->secondary) proj_max = fmax(proj_max, sim_rig_projection(&rig.rig, &o));
        }
        /* B z at the Gaussians: x − X is exactly 0 where z is 0 */
        sim_binding_eval(&bind, o.z, x, NULL);
        float *pt = pos + (int64_t)t * n * 3;
        for (int64_t k = 0; k < 3 * n; k++) {
            double d = x[k] - bind.X[k];
            pt[k] += (float)d;
            if (k % 3 == 2) {
                double l = sqrt((x[k - 2] - bind.X[k - 2]) * (x[k - 2] - bind.X[k - 2]) +
                                (x[k - 1] - bind.X[k - 1]) * (x[k - 1] - bind.X[k - 1]) + d * d);
                bz_max = fmax(bz_max, l);
            }
        }
    }
    int64_t fixed_rows, free_dims; /* the subspace's free coordinates after the rig's rows */
    sim_object_constraint_info(&o, &fixed_rows, &free_dims);
    *r = (SimSecondaryResult){.steps = nsteps, .newton_iters = iters, .failures = failures, .dt = dt, .max_displacement = bz_max,
                              .kinetic_max = ke_max, .projection_max = proj_max, .free_modes = free_dims / 3,
                              .cubature = o.nc, .handles = sk->m, .diag = o.diag, .kinetic = ke, .times = ke + nsteps + 1};
    ke = NULL;
    rc = 0;
done:
    free(P), free(Xobj), free(w), free(dw), free(x), free(T), free(ke);
    sim_binding_free(&bind);
    sim_rig_points_free(&rp);
    sim_lbs_rig_free(&rig);
    sim_object_free(&o);
    return rc;
}

void sim_secondary_free(SimSecondaryResult *r) {
    free(r->kinetic);
    memset(r, 0, sizeof *r);
}
