/* tools/view_files.c — what `anima view RUN|FILE` shows (tools/view_server.h): the PLY and HDF5
 * files of a run folder, or one file, each with the kind the page draws it as; a skinning file's
 * content as the page's JSON; and the request-path check that keeps every served name inside its
 * root. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/errbuf.h"
#include "sim/skinning.h"
#include "tools/view_server.h"

enum { MAX_FILES = 4096 };

/* a request path the static roots may serve: "/" then [A-Za-z0-9._@/-], no "..", no "//" */
bool view_path_ok(const char *p) {
    if (p[0] != '/' || strstr(p, "..") || strstr(p, "//") || strlen(p) > 512) return false;
    for (const char *c = p; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '_' || *c == '-' || *c == '/' || *c == '@'))
            return false;
    return true;
}

/* a skinning file as JSON for the page: vertices, faces, weights (nv × m) */
char *view_skinning_json(const char *path, char *err, size_t errlen) {
    SimSkinning s;
    if (sim_skinning_read(path, &s, err, errlen)) return NULL;
    if (!s.nv || !s.nf) {
        base_errf(err, errlen, "%s: no binding mesh (vertices and faces) to show", path);
        sim_skinning_free(&s);
        return NULL;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "handles", (double)s.m);
    cJSON *v = cJSON_AddArrayToObject(j, "vertices"), *f = cJSON_AddArrayToObject(j, "faces"),
          *w = cJSON_AddArrayToObject(j, "weights");
    for (int64_t i = 0; i < 3 * s.nv; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber(s.vert_x[i]));
    for (int64_t i = 0; i < 3 * s.nf; i++) cJSON_AddItemToArray(f, cJSON_CreateNumber(s.faces[i]));
    for (int64_t i = 0; i < s.nv * s.m; i++) cJSON_AddItemToArray(w, cJSON_CreateNumber((float)s.vert_w[i]));
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    sim_skinning_free(&s);
    if (!out) base_errf(err, errlen, "out of memory");
    return out;
}

static int cmp_files(const void *a, const void *b) {
    return strcmp(((const ViewFile *)a)->name, ((const ViewFile *)b)->name);
}

/* a PLY with the 3DGS properties is Gaussians, any other a mesh */
static const char *ply_kind(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *e = strstr(buf, "end_header");
    if (e) *e = 0;
    return strstr(buf, "f_dc_0") ? "gaussians" : "mesh";
}

static int add_file(ViewFiles *F, const char *dir, const char *name, char *err, size_t errlen) {
    const char *ext = strrchr(name, '.');
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *kind = NULL;
    if (ext && !strcmp(ext, ".ply")) kind = ply_kind(path);
    else if (ext && !strcmp(ext, ".h5")) kind = view_h5_kind(path);
    if (!kind) return 0;
    char req[PATH_MAX * 2 + 2];
    snprintf(req, sizeof req, "/%s", name);
    if (strchr(name, '/') && !view_path_ok(req)) return 0; /* a subfolder's file: a name the server may serve */
    if (strlen(name) >= sizeof F->files[0].name || F->n >= MAX_FILES) return 0;
    ViewFile *a = realloc(F->files, sizeof *a * (size_t)(F->n + 1));
    if (!a) {
        base_errf(err, errlen, "out of memory");
        return -1;
    }
    F->files = a;
    ViewFile *v = &F->files[F->n++];
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->kind, sizeof v->kind, "%s", !strncmp(name, "frame_", 6) && !strcmp(kind, "mesh") ? "frame" : kind);
    return 0;
}

/* a stage of a run folder: its files, named "sub/file" */
static int add_folder(ViewFiles *F, const char *dir, const char *sub, char *err, size_t errlen) {
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d) return 0; /* unreadable: not shown */
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char name[PATH_MAX * 2], full[PATH_MAX * 3];
        snprintf(name, sizeof name, "%s/%s", sub, e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, name);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) rc = add_file(F, dir, name, err, errlen);
    }
    closedir(d);
    return rc;
}

int view_files_scan(const char *target, ViewFiles *F, char *err, size_t errlen) {
    memset(F, 0, sizeof *F);
    struct stat st;
    if (stat(target, &st)) {
        base_errf(err, errlen, "%s: %s", target, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!realpath(target, F->dir)) {
            base_errf(err, errlen, "%s: %s", target, strerror(errno));
            return -1;
        }
        DIR *d = opendir(target);
        if (!d) {
            base_errf(err, errlen, "%s: %s", target, strerror(errno));
            return -1;
        }
        /* its own files; a folder with none of its own is a run folder of stages (RUN/gs4d,
         * RUN/rig of `anima gaussianimate`): their files, one level down */
        struct dirent *e;
        for (int pass = 0; pass < 2 && !F->n; pass++, rewinddir(d))
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                char sub[PATH_MAX * 2];
                snprintf(sub, sizeof sub, "%s/%s", F->dir, e->d_name);
                bool is_dir = stat(sub, &st) == 0 && S_ISDIR(st.st_mode);
                int rc = !is_dir && pass == 0 ? add_file(F, F->dir, e->d_name, err, errlen)
                         : is_dir && pass == 1 ? add_folder(F, F->dir, e->d_name, err, errlen)
                                               : 0;
                if (rc) {
                    closedir(d);
                    return -1;
                }
            }
        closedir(d);
        qsort(F->files, (size_t)F->n, sizeof *F->files, cmp_files);
        if (!F->n) {
            base_errf(err, errlen, "%s: no PLY or HDF5 (skinning, gt.h5, rig.h5, trajectories) file to show, in it or in "
                      "its subfolders (a run folder's stages)", target);
            return -1;
        }
        return 0;
    }
    char buf[PATH_MAX], buf2[PATH_MAX];
    if (!realpath(target, buf)) {
        base_errf(err, errlen, "%s: %s", target, strerror(errno));
        return -1;
    }
    snprintf(buf2, sizeof buf2, "%s", buf);
    char *slash = strrchr(buf, '/');
    *slash = 0;
    snprintf(F->dir, sizeof F->dir, "%s", buf[0] ? buf : "/");
    if (add_file(F, F->dir, slash + 1, err, errlen)) return -1;
    if (!F->n) {
        base_errf(err, errlen, "%s: not a file the viewer shows (a mesh or Gaussian PLY; a skinning file, gt.h5, rig.h5 or trajectories .h5)", target);
        return -1;
    }
    return 0;
}

void view_files_free(ViewFiles *f) {
    free(f->files);
    memset(f, 0, sizeof *f);
}
