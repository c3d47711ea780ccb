/* datasets/mesh/gaussian_ply.c — the 3D Gaussian Splatting PLY (layout and SH order: the header). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/mesh/gaussian_ply.h"
#include "datasets/mesh/mesh_internal.h"

enum { R_X = 0, R_DC = 3, R_OPACITY = 6, R_SCALE = 7, R_ROT = 10, R_FIXED = 14, R_REST = 100 };
static const char *const fixed_names[R_FIXED] = {"x", "y", "z", "f_dc_0", "f_dc_1", "f_dc_2", "opacity",
                                                 "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"};

int ds_gaussians_alloc(DsGaussians *g, int64_t n, int sh_degree) {
    memset(g, 0, sizeof *g);
    if (n < 0 || sh_degree < 0 || sh_degree > 3) return -1;
    size_t k = (size_t)ds_gaussians_sh_count(sh_degree), m = n ? (size_t)n : 1;
    g->n = n;
    g->sh_degree = sh_degree;
    g->xyz = calloc(3 * m, sizeof(float));
    g->sh = calloc(3 * k * m, sizeof(float));
    g->opacity = calloc(m, sizeof(float));
    g->scale = calloc(3 * m, sizeof(float));
    g->rot = calloc(4 * m, sizeof(float));
    if (!g->xyz || !g->sh || !g->opacity || !g->scale || !g->rot) {
        ds_gaussians_free(g);
        return -1;
    }
    return 0;
}

void ds_gaussians_free(DsGaussians *g) {
    if (!g) return;
    free(g->xyz);
    free(g->sh);
    free(g->opacity);
    free(g->scale);
    free(g->rot);
    memset(g, 0, sizeof *g);
}

/* The role of a property name, -1 for one the format does not define. */
static int role_of(const char *name) {
    for (int r = 0; r < R_FIXED; r++)
        if (!strcmp(name, fixed_names[r])) return r;
    if (!strncmp(name, "f_rest_", 7) && name[7]) {
        int j = 0;
        for (const char *p = name + 7; *p; p++) {
            if (*p < '0' || *p > '9' || j > 1000) return -2;
            j = j * 10 + (*p - '0');
        }
        if (name[7] == '0' && name[8]) return -2; /* "f_rest_01" is not a name the format uses */
        return R_REST + j;
    }
    return -1;
}

int ds_gaussians_read_mem(const char *name, const uint8_t *data, size_t size, DsGaussians *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    PlyHeader h;
    if (ds_ply_header_parse(name, data, size, &h, err, errlen)) return -1;
    int *role = NULL;
    int rc = -1;
    const PlyElem *ve = NULL;
    for (int i = 0; i < h.nelems; i++)
        if (!strcmp(h.elems[i].name, "vertex")) {
            if (ve) {
                base_errf(err, errlen, "%s: two 'vertex' elements", name);
                goto done;
            }
            ve = &h.elems[i];
        }
    if (!ve) {
        base_errf(err, errlen, "%s: no 'vertex' element (a 3D Gaussian PLY has one)", name);
        goto done;
    }
    role = malloc(sizeof(int) * (size_t)(ve->nprops ? ve->nprops : 1));
    if (!role) {
        base_errf(err, errlen, "%s: out of memory", name);
        goto done;
    }
    bool seen[R_FIXED] = {false}, rest_seen[45] = {false};
    int nrest = 0;
    for (int p = 0; p < ve->nprops; p++) {
        const PlyProp *pp = &ve->props[p];
        int r = role_of(pp->name);
        if (r == -2 || r >= R_REST + 45) {
            base_errf(err, errlen, "%s: property '%s': f_rest_j needs 0 <= j < 45 (SH degree 3 at most)", name, pp->name);
            goto done;
        }
        if (r >= 0 && pp->is_list) {
            base_errf(err, errlen, "%s: property '%s' is a list (a scalar was expected)", name, pp->name);
            goto done;
        }
        role[p] = r;
        if (r >= R_REST) rest_seen[r - R_REST] = true, nrest++;
        else if (r >= 0) seen[r] = true;
    }
    for (int r = 0; r < R_FIXED; r++)
        if (!seen[r]) {
            base_errf(err, errlen, "%s: element 'vertex' lacks property '%s' (not a 3D Gaussian PLY?)", name, fixed_names[r]);
            goto done;
        }
    int degree = nrest == 0 ? 0 : nrest == 9 ? 1 : nrest == 24 ? 2 : nrest == 45 ? 3 : -1;
    for (int j = 0; j < nrest && degree >= 0; j++)
        if (!rest_seen[j]) degree = -1;
    if (degree < 0) {
        base_errf(err, errlen, "%s: %d f_rest properties; f_rest_0..f_rest_(3(K-1)-1) with K = 4, 9 or 16 (or none) expected",
                  name, nrest);
        goto done;
    }
    if (ds_gaussians_alloc(g, ve->count, degree)) {
        base_errf(err, errlen, "%s: out of memory for %lld Gaussians", name, (long long)ve->count);
        goto done;
    }
    int K = ds_gaussians_sh_count(degree);
    PlyReader rd;
    ds_ply_reader_init(&rd, name, data, size, &h);
    for (int ei = 0; ei < h.nelems; ei++) {
        const PlyElem *e = &h.elems[ei];
        for (int64_t i = 0; i < e->count; i++)
            for (int p = 0; p < e->nprops; p++) {
                if (e != ve || role[p] < 0) {
                    if (ds_ply_skip_prop(&rd, &e->props[p], err, errlen)) goto done;
                    continue;
                }
                size_t at = rd.pos;
                int64_t line = rd.line;
                double x;
                if (ds_ply_read_value(&rd, e->props[p].type, &x, err, errlen)) goto done;
                if (!(fabs(x) <= 3.4028234663852886e38)) {
                    char w[4200];
                    rd.pos = at, rd.line = line;
                    ds_ply_where(&rd, w, sizeof w);
                    base_errf(err, errlen, "%s: Gaussian %lld: %s is not a finite float", w, (long long)i, e->props[p].name);
                    goto done;
                }
                float f = (float)x;
                int r = role[p];
                if (r < R_DC) g->xyz[3 * i + r] = f;
                else if (r < R_OPACITY) g->sh[(size_t)i * 3 * (size_t)K + (size_t)(r - R_DC)] = f;
                else if (r == R_OPACITY) g->opacity[i] = f;
                else if (r < R_ROT) g->scale[3 * i + r - R_SCALE] = f;
                else if (r < R_FIXED) g->rot[4 * i + r - R_ROT] = f;
                else {
                    /* file f_rest_j is channel-major: channel j / (K-1), coefficient 1 + j % (K-1) */
                    int j = r - R_REST, c = j / (K - 1), k = 1 + j % (K - 1);
                    g->sh[((size_t)i * (size_t)K + (size_t)k) * 3 + (size_t)c] = f;
                }
            }
    }
    rc = 0;
done:
    if (rc) ds_gaussians_free(g);
    free(role);
    ds_ply_header_free(&h);
    return rc;
}

int ds_gaussians_read(const char *path, DsGaussians *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    uint8_t *data;
    size_t size;
    if (ds_file_slurp(path, 0, NULL, &data, &size, err, errlen)) return -1;
    int rc = ds_gaussians_read_mem(path, data, size, g, err, errlen);
    free(data);
    return rc;
}

int ds_gaussians_write(const char *path, const DsGaussians *g, char *err, size_t errlen) {
    if (g->sh_degree < 0 || g->sh_degree > 3) return base_errf(err, errlen, "%s: SH degree %d (0..3)", path, g->sh_degree);
    int K = ds_gaussians_sh_count(g->sh_degree), nrest = 3 * (K - 1);
    MeshOut o;
    if (ds_mesh_out_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    fprintf(f, "ply\nformat binary_little_endian 1.0\nelement vertex %lld\n", (long long)g->n);
    static const char *const head[] = {"x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"};
    for (int i = 0; i < 9; i++) fprintf(f, "property float %s\n", head[i]);
    for (int j = 0; j < nrest; j++) fprintf(f, "property float f_rest_%d\n", j);
    fprintf(f, "property float opacity\n");
    for (int i = 0; i < 3; i++) fprintf(f, "property float scale_%d\n", i);
    for (int i = 0; i < 4; i++) fprintf(f, "property float rot_%d\n", i);
    fprintf(f, "end_header\n");
    for (int64_t i = 0; i < g->n; i++) {
        const float *sh = g->sh + (size_t)i * 3 * (size_t)K;
        for (int k = 0; k < 3; k++) ds_put_f32_le(f, g->xyz[3 * i + k]);
        for (int k = 0; k < 3; k++) ds_put_f32_le(f, 0.0f);
        for (int c = 0; c < 3; c++) ds_put_f32_le(f, sh[c]);
        for (int c = 0; c < 3; c++)
            for (int k = 1; k < K; k++) ds_put_f32_le(f, sh[3 * k + c]);
        ds_put_f32_le(f, g->opacity[i]);
        for (int k = 0; k < 3; k++) ds_put_f32_le(f, g->scale[3 * i + k]);
        for (int k = 0; k < 4; k++) ds_put_f32_le(f, g->rot[4 * i + k]);
    }
    return ds_mesh_out_close(&o, true, err, errlen);
}
