/* datasets/mesh/bvh.c — BVH reader and forward kinematics (conventions: bvh.h). The hierarchy is
 * parsed as a token stream with an explicit stack (no recursion, so nesting depth cannot
 * exhaust the C stack); frame values are read as a token stream too, since some exporters wrap
 * long frames over several lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/bvh.h"
#include "datasets/mesh/mesh_internal.h"

typedef struct {
    TextCursor c;
    Tok rest; /* what is left of the current line */
} Lexer;

static bool lex_next(Lexer *lx, Tok *t) {
    while (!ds_tok_next(&lx->rest, t)) {
        Tok ln;
        if (!ds_line_next(&lx->c, &ln)) return false;
        lx->rest = ln;
    }
    return true;
}

/* The rest of the current line, trimmed (joint names may contain spaces). */
static Tok lex_rest_of_line(Lexer *lx) {
    Tok r = lx->rest;
    while (r.len && (r.s[0] == ' ' || r.s[0] == '\t')) r.s++, r.len--;
    while (r.len && (r.s[r.len - 1] == ' ' || r.s[r.len - 1] == '\t' || r.s[r.len - 1] == '\r')) r.len--;
    lx->rest.s += lx->rest.len, lx->rest.len = 0;
    return r;
}

void ds_bvh_free(DsBvh *b) {
    if (!b) return;
    free(b->joints);
    free(b->motion);
    memset(b, 0, sizeof *b);
}

int ds_bvh_read_mem(const char *name, const uint8_t *data, size_t size, DsBvh *b, char *err, size_t errlen) {
    memset(b, 0, sizeof *b);
    Lexer lx;
    ds_text_init(&lx.c, data, size);
    lx.rest.s = (const char *)data, lx.rest.len = 0;
    Vec joints, stack;
    ds_vec_init(&joints, sizeof(DsBvhJoint));
    ds_vec_init(&stack, sizeof(int));
    Vec offs;
    ds_vec_init(&offs, sizeof(bool));
    int rc = -1;
    Tok t;
    char sb[40];
    int64_t nchan = 0;
#define FAIL(...)                                            \
    do {                                                     \
        ds_line_err(err, errlen, name, lx.c.line, __VA_ARGS__); \
        goto done;                                           \
    } while (0)
    for (size_t i = 0; i < size && i < 65536; i++)
        if (!data[i]) {
            base_errf(err, errlen, "%s: byte %zu: NUL byte: not a text BVH file", name, i);
            goto done;
        }
    if (!lex_next(&lx, &t) || !ds_tok_eq(t, "HIERARCHY")) FAIL("not a BVH file ('HIERARCHY' expected first)");
    for (;;) {
        if (!lex_next(&lx, &t)) FAIL("file ends inside the hierarchy ('MOTION' expected)");
        int top = stack.len ? ((int *)stack.data)[stack.len - 1] : -1;
        bool end_site = ds_tok_eq(t, "End");
        if (ds_tok_eq(t, "ROOT") || ds_tok_eq(t, "JOINT") || end_site) {
            if (ds_tok_eq(t, "ROOT") && top >= 0) FAIL("'ROOT' inside a joint");
            if (ds_tok_eq(t, "JOINT") && top < 0) FAIL("'JOINT' outside a ROOT");
            if (end_site && top < 0) FAIL("'End Site' outside a ROOT");
            if (top >= 0 && ((DsBvhJoint *)joints.data)[top].end_site) FAIL("a joint inside an End Site");
            if (joints.len >= 1000000) FAIL("more than a million joints");
            DsBvhJoint j;
            memset(&j, 0, sizeof j);
            j.parent = top;
            j.end_site = end_site;
            if (end_site) {
                if (!lex_next(&lx, &t) || !ds_tok_eq(t, "Site")) FAIL("'End' must be followed by 'Site'");
                snprintf(j.name, sizeof j.name, "%.59s_end", ((DsBvhJoint *)joints.data)[top].name);
            } else {
                Tok nm = lex_rest_of_line(&lx);
                if (!nm.len) FAIL("joint without a name");
                if (nm.len >= sizeof j.name) FAIL("joint name longer than %zu characters", sizeof j.name - 1);
                memcpy(j.name, nm.s, nm.len);
            }
            if (!lex_next(&lx, &t) || !ds_tok_eq(t, "{")) FAIL("'{' expected after joint '%s'", j.name);
            int idx = (int)joints.len;
            bool f = false;
            if (!ds_vec_push(&joints, &j) || !ds_vec_push(&stack, &idx) || !ds_vec_push(&offs, &f)) FAIL("out of memory");
        } else if (ds_tok_eq(t, "OFFSET")) {
            if (top < 0) FAIL("'OFFSET' outside a joint");
            DsBvhJoint *j = (DsBvhJoint *)joints.data + top;
            if (((bool *)offs.data)[top]) FAIL("second OFFSET for joint '%s'", j->name);
            for (int k = 0; k < 3; k++)
                if (!lex_next(&lx, &t) || !ds_tok_float(t, &j->offset[k])) FAIL("OFFSET needs 3 finite numbers");
            ((bool *)offs.data)[top] = true;
        } else if (ds_tok_eq(t, "CHANNELS")) {
            if (top < 0) FAIL("'CHANNELS' outside a joint");
            DsBvhJoint *j = (DsBvhJoint *)joints.data + top;
            if (j->end_site) FAIL("an End Site has no channels");
            if (j->nchan) FAIL("second CHANNELS for joint '%s'", j->name);
            int64_t n;
            if (!lex_next(&lx, &t) || !ds_tok_int64(t, &n) || n < 0 || n > 6) FAIL("CHANNELS count must be 0..6");
            static const char *const names[6] = {"Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"};
            for (int k = 0; k < n; k++) {
                if (!lex_next(&lx, &t)) FAIL("file ends in CHANNELS");
                int c = 0;
                while (c < 6 && !ds_tok_eq_nocase(t, names[c])) c++;
                if (c == 6) FAIL("unknown channel '%s'", ds_tok_show(t, sb, sizeof sb));
                for (int q = 0; q < k; q++)
                    if ((int)j->chan[q] == c) FAIL("channel '%s' listed twice", names[c]);
                j->chan[k] = (DsBvhChannel)c;
            }
            j->nchan = (int)n;
            j->chan_start = (int)nchan;
            nchan += n;
        } else if (ds_tok_eq(t, "}")) {
            if (top < 0) FAIL("'}' without a joint");
            if (!((bool *)offs.data)[top]) FAIL("joint '%s' has no OFFSET", ((DsBvhJoint *)joints.data)[top].name);
            stack.len--;
        } else if (ds_tok_eq(t, "MOTION")) {
            if (top >= 0) FAIL("'MOTION' inside joint '%s' (a '}' is missing)", ((DsBvhJoint *)joints.data)[top].name);
            break;
        } else {
            FAIL("unexpected '%s' in the hierarchy", ds_tok_show(t, sb, sizeof sb));
        }
    }
    if (!joints.len) FAIL("no joints before 'MOTION'");
    int64_t nframes;
    double ft;
    if (!lex_next(&lx, &t) || !ds_tok_eq(t, "Frames:") || !lex_next(&lx, &t) || !ds_tok_int64(t, &nframes) || nframes < 0)
        FAIL("'Frames: N' expected after MOTION");
    if (!lex_next(&lx, &t) || !ds_tok_eq(t, "Frame") || !lex_next(&lx, &t) || !ds_tok_eq(t, "Time:") || !lex_next(&lx, &t) ||
        !ds_tok_double(t, &ft) || !(ft > 0))
        FAIL("'Frame Time: T' with T > 0 expected");
    {
        /* every value takes at least two bytes: refuse counts the file cannot hold before
         * allocating for them */
        uint64_t left = (uint64_t)(lx.c.end - lx.c.p) + lx.rest.len + 1;
        if (nframes > 0 && nchan > 0 && (uint64_t)nframes > left / 2 / (uint64_t)nchan)
            FAIL("%lld frames of %lld channels cannot fit in the %llu bytes left", (long long)nframes, (long long)nchan,
                 (unsigned long long)left);
        if (nchan == 0 && nframes > (int64_t)left) FAIL("%lld frames without channels", (long long)nframes);
    }
    size_t nval = (size_t)nframes * (size_t)nchan;
    b->motion = malloc((nval ? nval : 1) * sizeof(float));
    if (!b->motion) FAIL("out of memory for %lld frames", (long long)nframes);
    for (size_t i = 0; i < nval; i++) {
        if (!lex_next(&lx, &t))
            FAIL("file ends in frame %lld of %lld", (long long)(i / (size_t)nchan), (long long)nframes);
        if (!ds_tok_float(t, &b->motion[i])) FAIL("bad number '%s' in frame %lld", ds_tok_show(t, sb, sizeof sb),
                                                (long long)(i / (size_t)nchan));
    }
    {
        /* "Frames:" governs: some exporters (Boxing_Toes.bvh among the assimp test files) write
         * one frame more than they declare. Whole extra frames of numbers are ignored; anything
         * else after the declared frames means the channel count and the data disagree. */
        int64_t extra = 0;
        float x;
        while (lex_next(&lx, &t)) {
            if (!ds_tok_float(t, &x)) FAIL("bad number '%s' after the %lld declared frames", ds_tok_show(t, sb, sizeof sb),
                                        (long long)nframes);
            extra++;
        }
        if (extra && (nchan == 0 || extra % nchan))
            FAIL("%lld values after the %lld declared frames: not whole frames of %lld channels", (long long)extra,
                 (long long)nframes, (long long)nchan);
    }
    b->njoints = (int)joints.len;
    b->joints = joints.data;
    ds_vec_init(&joints, sizeof(DsBvhJoint));
    b->nchannels = (int)nchan;
    b->nframes = nframes;
    b->frame_time = ft;
    rc = 0;
done:
    if (rc) ds_bvh_free(b);
    ds_vec_free(&joints);
    ds_vec_free(&stack);
    ds_vec_free(&offs);
    return rc;
#undef FAIL
}

int ds_bvh_read(const char *path, DsBvh *b, char *err, size_t errlen) {
    memset(b, 0, sizeof *b);
    uint8_t *data;
    size_t size;
    if (ds_file_slurp(path, 0, NULL, &data, &size, err, errlen)) return -1;
    int rc = ds_bvh_read_mem(path, data, size, b, err, errlen);
    free(data);
    return rc;
}

static void mat_mul(const double *a, const double *b, double *out) {
    double r[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += a[4 * i + k] * b[4 * k + j];
            r[4 * i + j] = s;
        }
    memcpy(out, r, sizeof r);
}

void ds_bvh_pose(const DsBvh *b, int64_t frame, double *world) {
    const float *row = frame >= 0 && frame < b->nframes ? b->motion + (size_t)frame * (size_t)b->nchannels : NULL;
    for (int j = 0; j < b->njoints; j++) {
        const DsBvhJoint *jt = &b->joints[j];
        double local[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
        double p[3] = {jt->offset[0], jt->offset[1], jt->offset[2]};
        for (int k = 0; k < jt->nchan; k++) {
            double v = row ? row[jt->chan_start + k] : 0.0;
            int c = (int)jt->chan[k];
            if (c < 3) {
                p[c] += v;
                continue;
            }
            /* intrinsic: each listed rotation multiplies on the right, R = R1 · R2 · R3 */
            double a = v * (M_PI / 180.0), cs = cos(a), sn = sin(a);
            double rm[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
            int u = (c - 3 + 1) % 3, w = (c - 3 + 2) % 3; /* the plane rotated: (y,z) for X, (z,x) for Y, (x,y) for Z */
            rm[4 * u + u] = cs, rm[4 * u + w] = -sn;
            rm[4 * w + u] = sn, rm[4 * w + w] = cs;
            mat_mul(local, rm, local);
        }
        local[3] = p[0], local[7] = p[1], local[11] = p[2];
        if (jt->parent >= 0) mat_mul(world + 16 * jt->parent, local, world + 16 * j);
        else memcpy(world + 16 * j, local, sizeof local);
    }
}
