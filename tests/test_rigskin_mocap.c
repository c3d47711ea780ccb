/* tests/test_rigskin_mocap.c — the mocap scenes of issue 21 (scenes/mocap_*.json) run with the
 * committed rig-small checkpoint (models/physskin/pretrained/rig-small.h5). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "models/physskin/infer.h"
#include "sim/scene.h"
#include "tests/test.h"

/* The mocap scenes (scenes/mocap_*.json: the rig-small checkpoint's fields on held-out procedural
 * characters, CMU capture and a trot, looped): ANIMA_RIG_STEPS steps (default 240; 10000 for the
 * long run) with the rig never stopping — no Newton failure, finite energies — and the secondary
 * displacement's mass-weighted projection onto the rig space (sim_rig_projection at every
 * written frame) below RIG_PROJECTION_TOL: the complementary subspace of sim/rig.h. */
#define RIG_PROJECTION_TOL 1e-6
TEST(rigskin_mocap_scenes_run_long) {
    int steps = getenv("ANIMA_RIG_STEPS") ? atoi(getenv("ANIMA_RIG_STEPS")) : (test_quick() ? 60 : 240);
    CHECK_MSG(steps >= 10, "ANIMA_RIG_STEPS must be >= 10");
    /* mocap_tail_swat: a second body (a free mug) the keyframed tail hits, through the IPC pairs */
    const char *files[3] = {"scenes/mocap_biped.json", "scenes/mocap_quadruped.json", "scenes/mocap_tail_swat.json"};
    /* the simulator includes no model: without a checkpoint skinner installed the scene is
     * refused, naming the hook; with PhysSkin's it runs */
    {
        SimScene sc;
        char err[1024];
        CHECK_MSG(sim_scene_load(files[0], &sc, err, sizeof err) == 0, "%s", err);
        sc.steps = 1, sc.output.png = false;
        snprintf(sc.output.mesh, sizeof sc.output.mesh, "none");
        char dir[] = "/tmp/anima-mocap-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        SimRunReport rep;
        sim_scene_set_checkpoint_skinner(NULL);
        CHECK(sim_scene_run(&sc, "scenes", dir, NULL, NULL, &rep, err, sizeof err) != 0);
        CHECK_MSG(strstr(err, "checkpoint skinner") && strstr(err, "rig-small.h5"), "%s", err);
        rmdir(dir);
        sim_scene_free(&sc);
    }
    sim_scene_set_checkpoint_skinner(ps_skin_checkpoint);
    for (int i = 0; i < 3; i++) {
        SimScene sc;
        char err[1024];
        CHECK_MSG(sim_scene_load(files[i], &sc, err, sizeof err) == 0, "%s", err);
        sc.steps = steps, sc.rig.t_stop = 1e30, sc.output.png = false, sc.output.every = 10;
        snprintf(sc.output.mesh, sizeof sc.output.mesh, "none");
        char dir[] = "/tmp/anima-mocap-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        SimRunReport rep;
        double t0 = base_now(), c0 = base_cpu_now();
        CHECK_MSG(sim_scene_run(&sc, "scenes", dir, NULL, NULL, &rep, err, sizeof err) == 0, "%s: %s", files[i], err);
        printf("    %s: %lld steps in %.1f s (cpu %.1f s), Newton %.2f it/step, failures %lld, secondary KE max %.3g J, "
               "projection onto the rig space <= %.2e, modes %d of %d, min pair distance %.3g m\n", files[i], (long long)rep.steps,
               base_now() - t0, base_cpu_now() - c0, (double)rep.newton_iters / (double)rep.steps,
               (long long)rep.newton_failures, rep.rig_kinetic_max, rep.rig_projection_max, rep.rig_modes_kept,
               rep.rig_modes, rep.min_distance);
        CHECK(rep.steps == steps && rep.newton_failures == 0);
        CHECK(rep.min_distance > 0); /* INFINITY without a second body */
        CHECK(isfinite(rep.rig_kinetic_max) && isfinite(rep.max_energy_rise) && rep.rig_kinetic_max > 0);
        CHECK_MSG(rep.rig_projection_max <= RIG_PROJECTION_TOL, "%s: projection %g", files[i], rep.rig_projection_max);
        char path[256];
        snprintf(path, sizeof path, "%s/kinetic.png", dir);
        unlink(path), rmdir(dir);
        sim_scene_free(&sc);
    }
}
