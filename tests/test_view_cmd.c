/* tests/test_view_cmd.c — the live viewer's client messages (tools/view_cmd.c): each input type
 * parsed into its ViewCmd, and malformed or out-of-range messages refused with the reason the
 * error reply carries (and the message's id when it had a valid one). No scene: the checks need
 * only the scope (draggable vertices, extent, the rig's bones). */
#include <stdlib.h>
#include <string.h>

#include "base/h5file.h"
#include "tests/test.h"
#include "tools/view_live.h"
#include "tools/view_server.h"

static int parse(const char *msg, const ViewScope *s, ViewCmd *c, char *why) {
    return view_cmd_parse(msg, strlen(msg), s, c, why, 160);
}

TEST(view_cmd_parse_inputs) {
    ViewScope s = {.nobj_v = 100, .extent = 2, .rig = NULL};
    ViewCmd c;
    char why[160];
    CHECK(parse("{\"type\":\"drag\",\"id\":7,\"vertex\":99,\"target\":[0.5,-1,2]}", &s, &c, why) == 0);
    CHECK(c.type == VIEW_CMD_DRAG && c.id == 7 && c.vertex == 99 && c.a[0] == 0.5 && c.a[1] == -1 && c.a[2] == 2);
    CHECK(parse("{\"type\":\"release\"}", &s, &c, why) == 0 && c.type == VIEW_CMD_RELEASE && c.id == 0);
    CHECK(parse("{\"type\":\"pin\",\"center\":[0,0,0],\"radius\":2}", &s, &c, why) == 0);
    CHECK(c.type == VIEW_CMD_PIN && c.radius == 2);
    CHECK(parse("{\"type\":\"unpin\"}", &s, &c, why) == 0 && c.type == VIEW_CMD_UNPIN);
    /* a ball's radius defaults to a tenth of the extent */
    CHECK(parse("{\"type\":\"drop_ball\",\"pos\":[0,1,0],\"vel\":[0,-3,0]}", &s, &c, why) == 0);
    CHECK(c.type == VIEW_CMD_BALL && c.radius == 0.2 && c.a[1] == 1 && c.b[1] == -3);
    CHECK(parse("{\"type\":\"reset\",\"id\":2147483647}", &s, &c, why) == 0 && c.type == VIEW_CMD_RESET &&
          c.id == 2147483647u);
    /* joints: by name or index, a rotation or clear */
    DsBone bones[2] = {0};
    snprintf(bones[0].name, sizeof bones[0].name, "root");
    snprintf(bones[1].name, sizeof bones[1].name, "arm");
    SimRig rig = {0};
    rig.nbones = 2, rig.shape.bones = bones, rig.shape.nbones = 2;
    ViewScope r = {.nobj_v = 100, .extent = 2, .rig = &rig};
    CHECK(parse("{\"type\":\"joint\",\"joint\":\"arm\",\"rotation\":[0,0,1.5]}", &r, &c, why) == 0);
    CHECK(c.type == VIEW_CMD_JOINT && c.vertex == 1 && c.a[2] == 1.5 && c.radius == 0);
    CHECK(parse("{\"type\":\"joint\",\"joint\":0,\"clear\":true}", &r, &c, why) == 0);
    CHECK(c.type == VIEW_CMD_JOINT && c.vertex == 0 && c.radius == 1);
}

TEST(view_cmd_parse_refusals) {
    DsBone bones[1] = {0};
    snprintf(bones[0].name, sizeof bones[0].name, "root");
    SimRig rig = {0};
    rig.nbones = 1, rig.shape.bones = bones, rig.shape.nbones = 1;
    ViewScope s = {.nobj_v = 100, .extent = 2, .rig = NULL}, r = {.nobj_v = 100, .extent = 2, .rig = &rig};
    static const struct {
        const char *msg;
        bool rigged;
        uint32_t id;
        const char *why;
    } cases[] = {
        {"{", false, 0, "not JSON"},
        {"[1,2]", false, 0, "a message is an object with a string \"type\""},
        {"{\"type\":3}", false, 0, "a message is an object with a string \"type\""},
        {"{\"type\":\"reset\",\"id\":0}", false, 0, "id must be an integer from 1 to 2147483647"},
        {"{\"type\":\"reset\",\"id\":1.5}", false, 0, "id must be an integer from 1 to 2147483647"},
        {"{\"type\":\"fly\",\"id\":4}", false, 4, "unknown type (drag, release, pin, unpin, drop_ball, joint, reset)"},
        {"{\"type\":\"drag\",\"id\":5,\"vertex\":100,\"target\":[0,0,0]}", false, 5, "drag: vertex must be an integer from 0 to 99"},
        {"{\"type\":\"drag\",\"vertex\":-1,\"target\":[0,0,0]}", false, 0, "drag: vertex must be an integer from 0 to 99"},
        {"{\"type\":\"drag\",\"vertex\":1}", false, 0, "drag: target is missing"},
        {"{\"type\":\"drag\",\"vertex\":1,\"target\":[0,0]}", false, 0, "drag: target must be an array of 3 numbers"},
        {"{\"type\":\"drag\",\"vertex\":1,\"target\":[0,\"x\",0]}", false, 0, "drag: target must be an array of 3 finite numbers"},
        {"{\"type\":\"drag\",\"vertex\":1,\"target\":[0,1001,0]}", false, 0, "drag: target is out of range"},
        {"{\"type\":\"pin\",\"center\":[0,0,0],\"radius\":3}", false, 0, "pin: radius must be a number in (0, 2]"},
        {"{\"type\":\"drop_ball\",\"pos\":[0,0,0],\"vel\":[0,101,0]}", false, 0, "drop_ball: vel is out of range"},
        {"{\"type\":\"drop_ball\",\"pos\":[0,0,0],\"vel\":[0,0,0],\"radius\":0.01}", false, 0,
         "drop_ball: radius must be a number in [0.02, 2]"},
        {"{\"type\":\"drop_ball\",\"pos\":[0,0,0],\"vel\":[0,0,0]}", true, 0,
         "drop_ball: not in a rigged scene (contact does not see the rig)"},
        {"{\"type\":\"joint\",\"joint\":0,\"clear\":true}", false, 0, "no rig in scene"},
        {"{\"type\":\"joint\",\"joint\":\"leg\",\"clear\":true}", true, 0, "joint: joint must be a bone name or an integer from 0 to 0"},
        {"{\"type\":\"joint\",\"joint\":0,\"clear\":1}", true, 0, "joint: clear must be true or false"},
        {"{\"type\":\"joint\",\"joint\":0,\"rotation\":[0,0,13]}", true, 0, "joint: rotation is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ViewCmd c;
        char why[160] = "";
        int rc = parse(cases[i].msg, cases[i].rigged ? &r : &s, &c, why);
        CHECK_MSG(rc == -1 && !strcmp(why, cases[i].why) && c.id == cases[i].id, "%s: rc %d, id %u, '%s'",
                  cases[i].msg, rc, c.id, why);
    }
    /* longer than a message may be */
    static char big[VIEW_MAX_MESSAGE + 2];
    memset(big, ' ', sizeof big - 1);
    ViewCmd c;
    char why[160];
    CHECK(view_cmd_parse(big, sizeof big - 1, &s, &c, why, sizeof why) == -1 && !strcmp(why, "message too large"));
}

/* `anima view RUN`: a folder with files of its own shows those; one without (a run folder of
 * stages: RUN/gs4d/canonical.ply, RUN/rig/rig.h5) shows its subfolders' as "sub/file" names the
 * server may serve; a folder with nothing to show names itself */
TEST(view_files_scan_run_folder_stages) {
    char dir[] = "/tmp/anima-test-viewrun-XXXXXX", cmd[1024], err[1024];
    if (!mkdtemp(dir)) abort();
    snprintf(cmd, sizeof cmd,
             "cd %s && mkdir -p gs4d rig logs empty/inner && printf 'ply\\nformat ascii 1.0\\nelement vertex 0\\n"
             "property float x\\nproperty float f_dc_0\\nend_header\\n' > gs4d/canonical.ply && "
             "printf 'ply\\nformat ascii 1.0\\nelement vertex 0\\nproperty float x\\nend_header\\n' > rig/bones.ply && "
             "echo text > logs/eval.txt && echo x > 'rig/bad name.ply'", dir);
    CHECK(system(cmd) == 0);
    ViewFiles F;
    CHECK_MSG(view_files_scan(dir, &F, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(F.n == 2, "%d files", F.n);
    if (F.n == 2) {
        CHECK(!strcmp(F.files[0].name, "gs4d/canonical.ply") && !strcmp(F.files[0].kind, "gaussians"));
        CHECK(!strcmp(F.files[1].name, "rig/bones.ply") && !strcmp(F.files[1].kind, "mesh"));
    }
    view_files_free(&F);
    /* with a file of its own, the folder shows that alone */
    snprintf(cmd, sizeof cmd, "cp %s/rig/bones.ply %s/top.ply", dir, dir);
    CHECK(system(cmd) == 0);
    CHECK_MSG(view_files_scan(dir, &F, err, sizeof err) == 0 && F.n == 1 && !strcmp(F.files[0].name, "top.ply"), "%d files", F.n);
    view_files_free(&F);
    snprintf(cmd, sizeof cmd, "%s/empty", dir);
    CHECK(view_files_scan(cmd, &F, err, sizeof err) == -1 && strstr(err, cmd) && strstr(err, "subfolders"));
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* which HDF5 files the viewer shows: gs4d fit's trajectories (frames/positions) as trajectories,
 * whose animation it serves; a skinning file by its format tag; a checkpoint not at all */
TEST(view_h5_kinds_of_run_files) {
    char dir[] = "/tmp/anima-test-viewh5-XXXXXX", path[256], tmp[512], err[1024];
    if (!mkdtemp(dir)) abort();
    float pos[2 * 3 * 3];
    for (int i = 0; i < 18; i++) pos[i] = 0.1f * i;
    const char *names[3] = {"trajectories.h5", "skin.h5", "ckpt.h5"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        hid_t f = base_h5_save_begin(path, tmp, sizeof tmp, err, sizeof err);
        CHECK_MSG(f >= 0, "%s", err);
        if (f < 0) continue;
        hsize_t d3[3] = {2, 3, 3};
        bool ok = k == 1 ? base_h5_attr_str(f, "format", "anima-skinning-1") == 0
                         : base_h5_write_checked(f, k == 0 ? "frames/positions" : "params/w", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 3, d3,
                                                 pos, 1 << 20, false) == 0;
        CHECK_MSG(base_h5_save_end(f, tmp, path, ok, "test file", err, sizeof err) == 0, "%s", err);
    }
    snprintf(path, sizeof path, "%s/trajectories.h5", dir);
    const char *k0 = view_h5_kind(path);
    CHECK(k0 && !strcmp(k0, "trajectories"));
    size_t len = 0;
    uint8_t *anim = view_h5_animation(path, &len, err, sizeof err);
    CHECK_MSG(anim && len > 18 * sizeof(float), "%s", err);
    free(anim);
    snprintf(path, sizeof path, "%s/skin.h5", dir);
    const char *k1 = view_h5_kind(path);
    CHECK(k1 && !strcmp(k1, "skinning"));
    snprintf(path, sizeof path, "%s/ckpt.h5", dir);
    CHECK(view_h5_kind(path) == NULL);
    ViewFiles F;
    CHECK_MSG(view_files_scan(dir, &F, err, sizeof err) == 0 && F.n == 2, "%d files: %s", F.n, err);
    view_files_free(&F);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}
