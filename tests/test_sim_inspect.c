/* tests/test_sim_inspect.c — what a viewer asks of a running simulation (sim/inspect.h), on
 * objects, rigid bodies and rigs filled in by hand with only the fields these read; and the
 * camera framing a scene's output (sim/scene.h's sim_scene_camera). */
#include <math.h>
#include <string.h>

#include "sim/inspect.h"
#include "sim/scene.h"
#include "tests/test.h"

/* two vertices, nb = 2 (z is 3 × nb, one row per axis): X + B z with or without a rig's u_r */
static double XV[6] = {0, 0, 0, 1, 2, 3}, BV[4] = {1, 0, 0.5, 0.5}, Z[6] = {1, 2, -1, 0, 4, 8}, UV[6] = {0, 0, 0, 10, 0, 0};

static SimObject two_vertices(void) {
    return (SimObject){.nb = 2, .n = 6, .nv = 2, .Xv = XV, .Bv = BV, .z = Z};
}

TEST(sim_inspect_vertex_now) {
    SimObject o = two_vertices();
    double x[3], all[6];
    sim_object_vertex_now(&o, 0, x);
    CHECK(x[0] == 1 && x[1] == -1 && x[2] == 4);
    sim_object_vertex_now(&o, 1, x);
    CHECK(x[0] == 2.5 && x[1] == 1.5 && x[2] == 9);
    o.rig_uv = UV; /* the rig's displacement added */
    sim_object_vertex_now(&o, 1, x);
    CHECK(x[0] == 12.5 && x[1] == 1.5 && x[2] == 9);
    /* the point sim_object_vertices gives */
    sim_object_vertices(&o, all);
    for (int v = 0; v < 2; v++) {
        sim_object_vertex_now(&o, v, x);
        for (int i = 0; i < 3; i++) CHECK_NEAR(x[i], all[3 * v + i], 1e-12);
    }
}

TEST(sim_inspect_nearest_vertex) {
    SimObject objs[2] = {two_vertices(), two_vertices()};
    objs[1].rig_uv = UV; /* object 1's vertex 1 at (12.5, 1.5, 9) */
    int64_t v = -1;
    CHECK(sim_objects_nearest_vertex(objs, 2, (double[]){2, 1, 9}, &v) == 0 && v == 1);
    CHECK(sim_objects_nearest_vertex(objs, 2, (double[]){12, 2, 9}, &v) == 1 && v == 1);
    CHECK(sim_objects_nearest_vertex(objs, 2, (double[]){1, -1, 4}, &v) == 0 && v == 0); /* the first of equals */
    CHECK(sim_objects_nearest_vertex(objs, 0, (double[]){0, 0, 0}, &v) == 0 && v == 0);
}

TEST(sim_inspect_rest_bounds_centroid_distance) {
    double X2[3] = {-3, 0.5, 1};
    SimObject objs[2] = {two_vertices(), {.nv = 1, .Xv = X2}};
    double c[3], ext;
    sim_objects_rest_bounds(objs, 2, c, &ext);
    CHECK(c[0] == -1 && c[1] == 1 && c[2] == 1.5 && ext == 4);
    sim_objects_rest_bounds(objs, 1, c, &ext);
    CHECK(c[0] == 0.5 && c[1] == 1 && c[2] == 1.5 && ext == 3);
    float pos[9] = {0, 0, 0, 1, 2, 3, 2, 4, 9};
    sim_points_centroid(pos, 3, c);
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 4);
    sim_points_centroid(pos, 1, c);
    CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0);
    SimRigid b = {.c = {1, 2, 2}};
    CHECK(sim_rigid_distance2(&b, (double[]){0, 0, 0}) == 9 && sim_rigid_distance2(&b, b.c) == 0);
}

TEST(sim_inspect_rig_bones_and_rotation) {
    /* the rig frame scaled by 2, turned 90° about z (x → y) and moved by (1, 0, 0) */
    DsBone bones[2] = {{.name = "root", .parent = -1, .head = {0, 0, 0}, .tail = {1, 0, 0}},
                       {.name = "tip", .parent = 0, .head = {1, 0, 0}, .tail = {1, 1, 0.5f}}};
    SimRig r = {.nbones = 2, .L = {0, -2, 0, 2, 0, 0, 0, 0, 2}, .off = {1, 0, 0}, .R = {0, -1, 0, 1, 0, 0, 0, 0, 1}};
    r.shape.nbones = 2, r.shape.bones = bones;
    double h[3], t[3];
    sim_rig_bone_world(&r, 0, h, t);
    CHECK(h[0] == 1 && h[1] == 0 && h[2] == 0 && t[0] == 1 && t[1] == 2 && t[2] == 0);
    sim_rig_bone_world(&r, 1, h, t);
    CHECK(h[0] == 1 && h[1] == 2 && h[2] == 0 && t[0] == -1 && t[1] == 2 && t[2] == 1);
    /* a turn about world y is one about the rig's x (R takes x to y): (cos θ/2, sin θ/2, 0, 0) */
    double q[4];
    sim_rig_world_rotation(&r, (double[]){0, 0.5, 0}, q);
    CHECK_NEAR(q[0], cos(0.25), 1e-15);
    CHECK_NEAR(q[1], sin(0.25), 1e-15);
    CHECK(q[2] == 0 && q[3] == 0);
    sim_rig_world_rotation(&r, (double[]){0, 0, 0}, q); /* no turn: the identity */
    CHECK(q[0] == 1 && q[1] == 0 && q[2] == 0 && q[3] == 0);
}

TEST(sim_inspect_scene_camera) {
    /* no eye or target in the scene: the box's center from (0.6, 0.6, 2.4) × extent away */
    SimScene sc = {0};
    sc.output.width = 64, sc.output.height = 48, sc.output.fov = 40;
    double c[3] = {1, 2, 3}, eye[3];
    DsCamera cam = sim_scene_camera(&sc, c, 2);
    ds_camera_center(&cam, eye);
    CHECK_NEAR(eye[0], 2.2, 1e-12);
    CHECK_NEAR(eye[1], 3.2, 1e-12);
    CHECK_NEAR(eye[2], 7.8, 1e-12);
    CHECK(cam.width == 64 && cam.height == 48);
    double uv[2], depth;
    CHECK(ds_camera_project(&cam, c, uv, &depth) && fabs(uv[0] - 32) < 1e-9 && fabs(uv[1] - 24) < 1e-9);
    /* the scene's own eye and target win */
    sc.output.has_eye = sc.output.has_target = true;
    memcpy(sc.output.eye, (double[]){0, 0, 10}, sizeof sc.output.eye);
    memcpy(sc.output.target, (double[]){0, 0, 0}, sizeof sc.output.target);
    cam = sim_scene_camera(&sc, c, 2);
    ds_camera_center(&cam, eye);
    CHECK_NEAR(eye[0], 0, 1e-12);
    CHECK_NEAR(eye[2], 10, 1e-12);
    CHECK(ds_camera_project(&cam, (double[]){0, 0, 0}, uv, &depth) && fabs(uv[0] - 32) < 1e-9 && fabs(depth - 10) < 1e-9);
}
