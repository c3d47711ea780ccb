/* datasets/motion/dnerf.c — the D-NeRF / nerfstudio transforms JSON: reader (cJSON, every value
 * checked) and writer (temporary name, fsync, rename). See dnerf.h for the convention. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errbuf.h"
#include "datasets/motion/dnerf.h"
#include "datasets/render/image.h"

#define MAX_JSON_BYTES ((size_t)256 << 20)
#define MAX_FRAMES 1000000

void ds_dnerf_free(DsDnerfSplit *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) free(s->views[i].rgba);
    free(s->views);
    memset(s, 0, sizeof *s);
}

/* ---- cameras ---------------------------------------------------------------------------------- */

void ds_dnerf_c2w_from_camera(const DsCamera *cam, double c2w[16]) {
    double C[3];
    ds_camera_center(cam, C);
    /* the rows of R are the OpenCV camera axes in world coordinates; OpenGL's are (x, −y, −z) and
     * form the columns of the camera-to-world rotation */
    for (int r = 0; r < 3; r++) {
        c2w[4 * r + 0] = cam->R[0 + r];
        c2w[4 * r + 1] = -cam->R[3 + r];
        c2w[4 * r + 2] = -cam->R[6 + r];
        c2w[4 * r + 3] = C[r];
    }
    c2w[12] = c2w[13] = c2w[14] = 0, c2w[15] = 1;
}

int ds_dnerf_camera_from_c2w(const double c2w[16], double fx, double fy, double cx, double cy, int width, int height,
                             DsCamera *out, char *err, size_t errlen) {
    for (int i = 0; i < 16; i++)
        if (!isfinite(c2w[i])) return base_errf(err, errlen, "transform_matrix has a non-finite entry");
    if (fabs(c2w[12]) > 1e-4 || fabs(c2w[13]) > 1e-4 || fabs(c2w[14]) > 1e-4 || fabs(c2w[15] - 1) > 1e-4)
        return base_errf(err, errlen, "transform_matrix: last row is [%g %g %g %g], expected [0 0 0 1]", c2w[12], c2w[13],
                         c2w[14], c2w[15]);
    if (!(fx > 0) || !(fy > 0) || !isfinite(fx) || !isfinite(fy) || !isfinite(cx) || !isfinite(cy))
        return base_errf(err, errlen, "intrinsics fx %g fy %g cx %g cy %g are not positive finite focal lengths", fx, fy,
                         cx, cy);
    /* columns: the OpenGL camera axes in world coordinates */
    double a[3][3];
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++) a[c][r] = c2w[4 * r + c];
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double d = a[i][0] * a[j][0] + a[i][1] * a[j][1] + a[i][2] * a[j][2] - (i == j);
            worst = fmax(worst, fabs(d));
        }
    double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                 a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    if (worst > 1e-3 || det < 0)
        return base_errf(err, errlen,
                         "transform_matrix: the 3x3 block is not a rotation (|R^T R - I| = %.3g, det %.3g; scaled or "
                         "mirrored cameras are not supported)",
                         worst, det);
    if (worst > 1e-12) {
        /* Gram-Schmidt: exports that print 6 digits are slightly off a rotation; files written
         * with 17 digits are left bit for bit as they are */
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < i; j++) {
                double d = a[i][0] * a[j][0] + a[i][1] * a[j][1] + a[i][2] * a[j][2];
                for (int k = 0; k < 3; k++) a[i][k] -= d * a[j][k];
            }
            double n = sqrt(a[i][0] * a[i][0] + a[i][1] * a[i][1] + a[i][2] * a[i][2]);
            for (int k = 0; k < 3; k++) a[i][k] /= n;
        }
    }
    memset(out, 0, sizeof *out);
    out->width = width, out->height = height;
    out->fx = fx, out->fy = fy, out->cx = cx, out->cy = cy;
    out->znear = 0.01, out->zfar = 100.0;
    static const double sign[3] = {1, -1, -1};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) out->R[3 * r + k] = sign[r] * a[r][k];
    for (int r = 0; r < 3; r++)
        out->t[r] = -(out->R[3 * r] * c2w[3] + out->R[3 * r + 1] * c2w[7] + out->R[3 * r + 2] * c2w[11]);
    return 0;
}

/* ---- reader ----------------------------------------------------------------------------------- */

typedef struct {
    /* what a level (top or frame) says; NAN / -1: not given */
    double fl_x, fl_y, cx, cy, angle_x, angle_y;
    int w, h;
} Intr;

/* a number member: 0 absent, 1 read, -1 present but not a finite number */
static int num(const cJSON *o, const char *key, double *v) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return -1;
    *v = x->valuedouble;
    return 1;
}

/* reads the intrinsics of one level into in (keeping what it does not give); 0 or -1 with err */
static int read_intr(const cJSON *o, const char *where, Intr *in, char *err, size_t errlen) {
    static const char *keys[6] = {"fl_x", "fl_y", "cx", "cy", "camera_angle_x", "camera_angle_y"};
    double *dst[6] = {&in->fl_x, &in->fl_y, &in->cx, &in->cy, &in->angle_x, &in->angle_y};
    for (int k = 0; k < 6; k++) {
        double v;
        int r = num(o, keys[k], &v);
        if (r < 0) return base_errf(err, errlen, "%s'%s' is not a finite number", where, keys[k]);
        if (r == 0) continue;
        if (!(v > 0) || (k >= 4 && !(v < M_PI)) || v > 1e9)
            return base_errf(err, errlen, "%s'%s' = %g out of range", where, keys[k], v);
        *dst[k] = v;
    }
    static const char *sk[2] = {"w", "h"};
    int *sd[2] = {&in->w, &in->h};
    for (int k = 0; k < 2; k++) {
        double v;
        int r = num(o, sk[k], &v);
        if (r < 0) return base_errf(err, errlen, "%s'%s' is not a finite number", where, sk[k]);
        if (r == 0) continue;
        if (!(v >= 1 && v <= DS_IMAGE_MAX_SIDE) || v != floor(v))
            return base_errf(err, errlen, "%s'%s' = %g is not an image size in [1, %d]", where, sk[k], v,
                             DS_IMAGE_MAX_SIDE);
        *sd[k] = (int)v;
    }
    static const char *dist[6] = {"k1", "k2", "k3", "k4", "p1", "p2"};
    for (int k = 0; k < 6; k++) {
        double v;
        int r = num(o, dist[k], &v);
        if (r < 0) return base_errf(err, errlen, "%s'%s' is not a finite number", where, dist[k]);
        if (r > 0 && v != 0)
            return base_errf(err, errlen, "%s'%s' = %g: lens distortion is not supported (undistort the images first)",
                             where, dist[k], v);
    }
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(o, "camera_model");
    if (cm) {
        if (!cJSON_IsString(cm)) return base_errf(err, errlen, "%s'camera_model' is not a string", where);
        if (strcmp(cm->valuestring, "OPENCV") && strcmp(cm->valuestring, "PINHOLE") &&
            strcmp(cm->valuestring, "SIMPLE_PINHOLE"))
            return base_errf(err, errlen, "%scamera_model '%.40s' is not supported (pinhole cameras only)", where,
                             cm->valuestring);
    }
    return 0;
}

/* "dir/file_path" with "./" stripped and ".png" appended to a name without an extension */
static int image_path(const char *dir, const char *fp, char *out, size_t n) {
    while (fp[0] == '.' && fp[1] == '/') fp += 2;
    const char *base = strrchr(fp, '/');
    base = base ? base + 1 : fp;
    bool ext = strchr(base, '.') != NULL;
    int k = fp[0] == '/' ? snprintf(out, n, "%s%s", fp, ext ? "" : ".png")
                         : snprintf(out, n, "%s/%s%s", dir, fp, ext ? "" : ".png");
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

static int to_rgba(const DsImage *img, float *dst) {
    size_t np = (size_t)img->w * (size_t)img->h;
    for (size_t p = 0; p < np; p++) {
        const uint8_t *s = img->data + p * (size_t)img->channels;
        float *d = dst + 4 * p;
        switch (img->channels) {
        case 1: d[0] = d[1] = d[2] = s[0] / 255.0f, d[3] = 1; break;
        case 2: d[0] = d[1] = d[2] = s[0] / 255.0f, d[3] = s[1] / 255.0f; break;
        case 3: d[0] = s[0] / 255.0f, d[1] = s[1] / 255.0f, d[2] = s[2] / 255.0f, d[3] = 1; break;
        case 4:
            for (int k = 0; k < 4; k++) d[k] = s[k] / 255.0f;
            break;
        default: return -1;
        }
    }
    return 0;
}

static int parse(const char *name, const cJSON *root, const char *dir, DsDnerfSplit *out, char *err, size_t errlen) {
    char e[1024], where[64];
    if (!cJSON_IsObject(root)) return base_errf(err, errlen, "%s: expected a JSON object at the top level", name);
    Intr top = {NAN, NAN, NAN, NAN, NAN, NAN, -1, -1};
    if (read_intr(root, "", &top, e, sizeof e)) return base_errf(err, errlen, "%s: %s", name, e);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(root, "frames");
    if (!frames) return base_errf(err, errlen, "%s: no 'frames' array", name);
    if (!cJSON_IsArray(frames)) return base_errf(err, errlen, "%s: 'frames' is not an array", name);
    int n = cJSON_GetArraySize(frames);
    if (n < 1) return base_errf(err, errlen, "%s: 'frames' is empty", name);
    if (n > MAX_FRAMES) return base_errf(err, errlen, "%s: %d frames (more than %d)", name, n, MAX_FRAMES);
    out->views = calloc((size_t)n, sizeof *out->views);
    if (!out->views) return base_errf(err, errlen, "%s: out of memory", name);
    int with_time = -1; /* whether frames carry "time": all or none */
    const cJSON *fr;
    int i = 0;
    cJSON_ArrayForEach(fr, frames) {
        snprintf(where, sizeof where, "frames[%d]: ", i);
        if (!cJSON_IsObject(fr)) return base_errf(err, errlen, "%s: %snot an object", name, where);
        Intr in = top;
        if (read_intr(fr, where, &in, e, sizeof e)) return base_errf(err, errlen, "%s: %s", name, e);
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(fr, "file_path");
        if (!fp) return base_errf(err, errlen, "%s: %sno 'file_path'", name, where);
        if (!cJSON_IsString(fp) || !fp->valuestring[0])
            return base_errf(err, errlen, "%s: %s'file_path' is not a non-empty string", name, where);
        DsDnerfView *v = &out->views[i];
        if (image_path(dir, fp->valuestring, v->path, sizeof v->path))
            return base_errf(err, errlen, "%s: %s'file_path' is too long", name, where);
        const char *dot = strrchr(v->path, '.');
        if (!dot || (strcmp(dot, ".png") && strcmp(dot, ".PNG")))
            return base_errf(err, errlen, "%s: %s%s: only PNG images are read", name, where, v->path);
        /* time */
        double t = 0;
        int tr = num(fr, "time", &t);
        if (tr < 0) return base_errf(err, errlen, "%s: %s'time' is not a finite number", name, where);
        if (with_time >= 0 && with_time != tr)
            return base_errf(err, errlen, "%s: %s'time' is %s here but %s in frames[0] (all frames or none)", name, where,
                             tr ? "given" : "missing", with_time ? "given" : "missing");
        with_time = tr;
        if (tr && !(t >= 0 && t <= 1)) return base_errf(err, errlen, "%s: %s'time' = %g outside [0, 1]", name, where, t);
        v->time = (float)t;
        /* transform */
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(fr, "transform_matrix");
        if (!tm) return base_errf(err, errlen, "%s: %sno 'transform_matrix'", name, where);
        double m[16];
        bool ok = cJSON_IsArray(tm) && cJSON_GetArraySize(tm) == 4;
        for (int r = 0; ok && r < 4; r++) {
            const cJSON *row = cJSON_GetArrayItem(tm, r);
            ok = cJSON_IsArray(row) && cJSON_GetArraySize(row) == 4;
            for (int c = 0; ok && c < 4; c++) {
                const cJSON *x = cJSON_GetArrayItem(row, c);
                ok = cJSON_IsNumber(x) && isfinite(x->valuedouble);
                if (ok) m[4 * r + c] = x->valuedouble;
            }
        }
        if (!ok)
            return base_errf(err, errlen, "%s: %s'transform_matrix' is not a 4x4 array of finite numbers", name, where);
        /* the image (its size fills in w, h) */
        DsImage img;
        if (ds_image_read(v->path, &img, e, sizeof e)) return base_errf(err, errlen, "%s: %s%s", name, where, e);
        if ((in.w >= 0 && img.w != in.w) || (in.h >= 0 && img.h != in.h)) {
            int iw = img.w, ih = img.h;
            ds_image_free(&img);
            return base_errf(err, errlen, "%s: %s%s is %dx%d but the intrinsics say w %d h %d", name, where, v->path, iw,
                             ih, in.w, in.h);
        }
        if (i > 0 && (img.w != out->width || img.h != out->height)) {
            int iw = img.w, ih = img.h;
            ds_image_free(&img);
            return base_errf(err, errlen, "%s: %s%s is %dx%d, frames[0]'s image %dx%d (one size per split)", name, where,
                             v->path, iw, ih, out->width, out->height);
        }
        out->width = img.w, out->height = img.h;
        v->rgba = malloc(sizeof(float) * 4 * (size_t)img.w * (size_t)img.h);
        if (!v->rgba) {
            ds_image_free(&img);
            return base_errf(err, errlen, "%s: out of memory", name);
        }
        out->n = i + 1; /* so that a failure below frees this view's pixels */
        int crc = to_rgba(&img, v->rgba);
        ds_image_free(&img);
        if (crc) return base_errf(err, errlen, "%s: %s%s: unsupported channel count", name, where, v->path);
        /* intrinsics */
        double W = out->width, H = out->height;
        double fx = in.fl_x, fy = in.fl_y;
        if (!isfinite(fx) && isfinite(in.angle_x)) fx = 0.5 * W / tan(0.5 * in.angle_x);
        if (!isfinite(fy) && isfinite(in.angle_y)) fy = 0.5 * H / tan(0.5 * in.angle_y);
        if (!isfinite(fx) && isfinite(fy)) fx = fy;
        if (!isfinite(fy)) fy = fx;
        if (!isfinite(fx))
            return base_errf(err, errlen, "%s: %sno focal length (fl_x, fl_y or camera_angle_x)", name, where);
        double cx = isfinite(in.cx) ? in.cx : 0.5 * W, cy = isfinite(in.cy) ? in.cy : 0.5 * H;
        if (ds_dnerf_camera_from_c2w(m, fx, fy, cx, cy, out->width, out->height, &v->cam, e, sizeof e))
            return base_errf(err, errlen, "%s: %s%s", name, where, e);
        i++;
    }
    return 0;
}

int ds_dnerf_load_text(const char *name, const char *text, size_t len, const char *dir, DsDnerfSplit *out, char *err,
                       size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        const char *at = cJSON_GetErrorPtr();
        if (at && at >= text && at <= text + len) off = (size_t)(at - text);
        int line = 1;
        for (size_t k = 0; k < off && k < len; k++) line += text[k] == '\n';
        return base_errf(err, errlen, "%s:%d: invalid JSON (at byte %zu of %zu)", name, line, off, len);
    }
    /* only whitespace may follow the value */
    for (const char *p = end; p && p < text + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != 0) {
            cJSON_Delete(root);
            return base_errf(err, errlen, "%s: text after the JSON value (at byte %zu)", name, (size_t)(p - text));
        }
    int rc = parse(name, root, dir, out, err, errlen);
    cJSON_Delete(root);
    if (rc) ds_dnerf_free(out);
    return rc;
}

int ds_dnerf_load(const char *dir, const char *split, DsDnerfSplit *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!split || (strcmp(split, "train") && strcmp(split, "val") && strcmp(split, "test")))
        return base_errf(err, errlen, "%s: split '%s' is not train, val or test", dir, split ? split : "(null)");
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/transforms_%s.json", dir, split) >= sizeof path)
        return base_errf(err, errlen, "%s: path too long", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return base_errf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return base_errf(err, errlen, "%s: not a regular file", path);
    }
    if ((size_t)st.st_size > MAX_JSON_BYTES) {
        fclose(f);
        return base_errf(err, errlen, "%s: %lld bytes, larger than the %zu MiB limit", path, (long long)st.st_size,
                         MAX_JSON_BYTES >> 20);
    }
    size_t cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return base_errf(err, errlen, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, cap - 1, f);
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    if (rerr) {
        free(buf);
        return base_errf(err, errlen, "%s: cannot read (%s)", path, strerror(rerr));
    }
    buf[n] = 0;
    if (!n) {
        free(buf);
        return base_errf(err, errlen, "%s: empty file", path);
    }
    int rc = ds_dnerf_load_text(path, buf, n, dir, out, err, errlen);
    free(buf);
    return rc;
}

/* ---- writer ----------------------------------------------------------------------------------- */

int ds_dnerf_write_json(const char *path, const DsDnerfFrameOut *frames, int n, const char *extra, char *err,
                        size_t errlen) {
    if (n < 1) return base_errf(err, errlen, "%s: no frames to write", path);
    static atomic_uint seq;
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1)) >= sizeof tmp)
        return base_errf(err, errlen, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return base_errf(err, errlen, "%s: cannot create (%s)", tmp, strerror(errno));
    const DsCamera *c0 = &frames[0].cam;
    double angle_x = 2 * atan(0.5 * c0->width / c0->fx), angle_y = 2 * atan(0.5 * c0->height / c0->fy);
    fprintf(f, "{\n  \"camera_angle_x\": %.17g,\n  \"camera_angle_y\": %.17g,\n", angle_x, angle_y);
    fprintf(f, "  \"fl_x\": %.17g,\n  \"fl_y\": %.17g,\n  \"cx\": %.17g,\n  \"cy\": %.17g,\n  \"w\": %d,\n  \"h\": %d,\n",
            c0->fx, c0->fy, c0->cx, c0->cy, c0->width, c0->height);
    fprintf(f, "  \"camera_model\": \"OPENCV\",\n");
    if (extra && *extra) fprintf(f, "  %s,\n", extra);
    fprintf(f, "  \"frames\": [\n");
    for (int i = 0; i < n; i++) {
        const DsDnerfFrameOut *fr = &frames[i];
        double m[16];
        ds_dnerf_c2w_from_camera(&fr->cam, m);
        fprintf(f, "    {\"file_path\": \"");
        for (const char *p = fr->file_path; *p; p++) {
            if (*p == '"' || *p == '\\') fputc('\\', f);
            if ((unsigned char)*p >= 0x20) fputc(*p, f);
        }
        fprintf(f, "\", \"time\": %.9g", (double)fr->time);
        if (fr->view >= 0) fprintf(f, ", \"view\": %d", fr->view);
        if (fr->frame >= 0) fprintf(f, ", \"frame\": %d", fr->frame);
        /* per-frame intrinsics only where they differ from the top level's */
        if (fr->cam.fx != c0->fx || fr->cam.fy != c0->fy || fr->cam.cx != c0->cx || fr->cam.cy != c0->cy)
            fprintf(f, ", \"fl_x\": %.17g, \"fl_y\": %.17g, \"cx\": %.17g, \"cy\": %.17g", fr->cam.fx, fr->cam.fy,
                    fr->cam.cx, fr->cam.cy);
        fprintf(f, ",\n     \"transform_matrix\": [");
        for (int r = 0; r < 4; r++)
            fprintf(f, "[%.17g, %.17g, %.17g, %.17g]%s", m[4 * r], m[4 * r + 1], m[4 * r + 2], m[4 * r + 3],
                    r < 3 ? ", " : "");
        fprintf(f, "]}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "  ]\n}\n");
    int e = 0;
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        remove(tmp);
        return base_errf(err, errlen, "%s: write failed (%s)", path, strerror(e));
    }
    return 0;
}
