/* sim/fem.c — tetrahedral FEM baseline (TetGen + CHOLMOD); see fem.h. */
#include <cholmod.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/par.h"
#include "base/mat3.h"
#include "sim/fem.h"
#include "sim/internal.h"
#include "sim/newton.h"

/* ---- TetGen ------------------------------------------------------------------------------------ */

int sim_fem_tetrahedralize(const double *V, int64_t nv, const int32_t *F, int64_t nf, double quality, double max_vol, double **nodes,
                           int64_t *nn, int32_t **tets, int64_t *nt, char *err, size_t errlen) {
    *nodes = NULL, *tets = NULL, *nn = *nt = 0;
    char dir[] = "/tmp/anima_tetgen_XXXXXX", path[512], cmd[1024];
    if (!mkdtemp(dir)) {
        base_errf(err, errlen, "fem: cannot create a temporary directory");
        return -1;
    }
    int rc = -1;
    snprintf(path, sizeof path, "%s/surf.off", dir);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        base_errf(err, errlen, "fem: cannot write %s", path);
        goto out;
    }
    fprintf(fp, "OFF\n%lld %lld 0\n", (long long)nv, (long long)nf);
    for (int64_t i = 0; i < nv; i++) fprintf(fp, "%.17g %.17g %.17g\n", V[3 * i], V[3 * i + 1], V[3 * i + 2]);
    for (int64_t i = 0; i < nf; i++) fprintf(fp, "3 %d %d %d\n", F[3 * i], F[3 * i + 1], F[3 * i + 2]);
    fclose(fp);
    char vol[64] = "";
    if (max_vol > 0) snprintf(vol, sizeof vol, "a%.6g", max_vol);
    /* -p: tetrahedralize the surface (a PLC); -q<ρ>: radius-edge ratio bound ρ (refines until the
     * tets are well shaped: 1.5 is fine and slow, 3 coarse); -Y: no Steiner points on the
     * surface; -Q: quiet */
    char q[64] = "Y"; /* no quality bound: keep the surface as given (no Steiner points on it) */
    if (quality > 0) snprintf(q, sizeof q, "q%.4g", quality);
    snprintf(cmd, sizeof cmd, "tetgen -p%s%sQ '%s' > '%s/log' 2>&1", q, vol, path, dir);
    int st = system(cmd);
    if (st != 0) {
        base_errf(err, errlen, "fem: `tetgen` failed (exit %d; is Debian's tetgen installed? tools/install-deps.sh)", st);
        goto out;
    }
    /* .node: "<n> 3 <attrs> <marker>", then "<i> x y z ..."; .ele: "<n> 4 <attrs>", "<i> a b c d" */
    snprintf(path, sizeof path, "%s/surf.1.node", dir);
    fp = fopen(path, "r");
    long long n = 0, dim = 0, na = 0, nm = 0;
    if (!fp || fscanf(fp, "%lld %lld %lld %lld", &n, &dim, &na, &nm) != 4 || dim != 3 || n < 4) {
        if (fp) fclose(fp);
        base_errf(err, errlen, "fem: cannot read tetgen's %s", path);
        goto out;
    }
    *nodes = malloc(sizeof(double) * 3 * (size_t)n);
    long long first = -1;
    for (long long i = 0; i < n && *nodes; i++) {
        long long id;
        double x, y, z, skip;
        if (fscanf(fp, "%lld %lf %lf %lf", &id, &x, &y, &z) != 4) break;
        for (long long k = 0; k < na + nm; k++)
            if (fscanf(fp, "%lf", &skip) != 1) break;
        if (first < 0) first = id;
        if (id - first != i) break;
        (*nodes)[3 * i] = x, (*nodes)[3 * i + 1] = y, (*nodes)[3 * i + 2] = z;
        *nn = i + 1;
    }
    fclose(fp);
    if (*nn != n) {
        base_errf(err, errlen, "fem: tetgen's %s is truncated", path);
        goto out;
    }
    snprintf(path, sizeof path, "%s/surf.1.ele", dir);
    fp = fopen(path, "r");
    long long m = 0, npt = 0;
    if (!fp || fscanf(fp, "%lld %lld %lld", &m, &npt, &na) != 3 || npt != 4 || m < 1) {
        if (fp) fclose(fp);
        base_errf(err, errlen, "fem: cannot read tetgen's %s", path);
        goto out;
    }
    *tets = malloc(sizeof(int32_t) * 4 * (size_t)m);
    for (long long i = 0; i < m && *tets; i++) {
        long long id, a[4];
        double skip;
        if (fscanf(fp, "%lld %lld %lld %lld %lld", &id, &a[0], &a[1], &a[2], &a[3]) != 5) break;
        for (long long k = 0; k < na; k++)
            if (fscanf(fp, "%lf", &skip) != 1) break;
        int ok = 1;
        for (int k = 0; k < 4; k++) {
            a[k] -= first;
            if (a[k] < 0 || a[k] >= n) ok = 0;
            (*tets)[4 * i + k] = (int32_t)a[k];
        }
        if (!ok) break;
        *nt = i + 1;
    }
    fclose(fp);
    if (*nt != m) {
        base_errf(err, errlen, "fem: tetgen's %s is truncated or indexes past the nodes", path);
        goto out;
    }
    /* the input vertices must come first (the comparison reads them by index) */
    for (int64_t i = 0; i < nv && i < *nn; i++)
        for (int k = 0; k < 3; k++)
            if (fabs((*nodes)[3 * i + k] - V[3 * i + k]) > 1e-9 * (1 + fabs(V[3 * i + k]))) {
                base_errf(err, errlen, "fem: tetgen reordered the input vertices (vertex %lld)", (long long)i);
                goto out;
            }
    rc = 0;
out:
    if (rc) {
        free(*nodes), free(*tets);
        *nodes = NULL, *tets = NULL, *nn = *nt = 0;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* a leftover temporary directory is harmless */
    }
    return rc;
}

/* ---- setup ------------------------------------------------------------------------------------- */

struct SimFemSolver {
    cholmod_common cm;
    cholmod_sparse *K;   /* the free dofs' Hessian, upper triangle (stype 1), fixed pattern */
    cholmod_factor *L;
    int64_t ndof;
    int64_t *dof;        /* 3nn: free dof index or -1 */
    int64_t *tmap;       /* nt × 144: position in K->x of local entry (α, β), or -1 (not stored) */
    int64_t *diag3;      /* nn × 9: positions of the node's 3×3 diagonal block (upper part), or -1 */
    double *g, *gt, *dx, *xt, *xtil;
};

void sim_fem_free(SimFem *f) {
    free(f->X), free(f->x), free(f->v), free(f->tets), free(f->Dminv), free(f->vol), free(f->mass), free(f->fixed);
    if (f->sol) {
        struct SimFemSolver *s = f->sol;
        cholmod_free_factor(&s->L, &s->cm);
        cholmod_free_sparse(&s->K, &s->cm);
        cholmod_finish(&s->cm);
        free(s->dof), free(s->tmap), free(s->diag3), free(s->g), free(s->gt), free(s->dx), free(s->xt), free(s->xtil);
        free(s);
    }
    memset(f, 0, sizeof *f);
}

int sim_fem_init(SimFem *f, const double *nodes, int64_t nn, const int32_t *tets, int64_t nt, const SimMaterial *mat,
                 char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    if (!(mat->E > 0) || !(mat->nu > -1 && mat->nu < 0.5) || !(mat->rho > 0)) {
        base_errf(err, errlen, "fem: material needs E > 0, -1 < nu < 0.5, rho > 0");
        return -1;
    }
    f->nn = nn, f->nt = nt;
    sim_lame(mat, &f->mu, &f->lam);
    f->rho = mat->rho;
    sim_newton_defaults(&f->newton);
    f->X = malloc(sizeof(double) * 3 * (size_t)nn), f->x = malloc(sizeof(double) * 3 * (size_t)nn);
    f->v = calloc(3 * (size_t)nn, sizeof(double)), f->mass = calloc((size_t)nn, sizeof(double));
    f->tets = malloc(sizeof(int32_t) * 4 * (size_t)nt), f->Dminv = malloc(sizeof(double) * 9 * (size_t)nt);
    f->vol = malloc(sizeof(double) * (size_t)nt), f->fixed = calloc((size_t)nn, sizeof(bool));
    if (!f->X || !f->x || !f->v || !f->mass || !f->tets || !f->Dminv || !f->vol || !f->fixed) {
        sim_fem_free(f);
        base_errf(err, errlen, "fem: out of memory");
        return -1;
    }
    memcpy(f->X, nodes, sizeof(double) * 3 * (size_t)nn);
    memcpy(f->x, nodes, sizeof(double) * 3 * (size_t)nn);
    memcpy(f->tets, tets, sizeof(int32_t) * 4 * (size_t)nt);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < nn; i++)
        for (int k = 0; k < 3; k++) lo[k] = fmin(lo[k], nodes[3 * i + k]), hi[k] = fmax(hi[k], nodes[3 * i + k]);
    f->diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    for (int64_t t = 0; t < nt; t++) {
        int32_t *T = f->tets + 4 * t;
        double Dm[9];
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) Dm[3 * i + k] = nodes[3 * T[k + 1] + i] - nodes[3 * T[0] + i];
        double d = base_mat3_det(Dm);
        if (d < 0) { /* positively oriented, so J = det F > 0 at rest */
            int32_t s = T[1];
            T[1] = T[2], T[2] = s;
            for (int i = 0; i < 3; i++) {
                double u = Dm[3 * i];
                Dm[3 * i] = Dm[3 * i + 1], Dm[3 * i + 1] = u;
            }
            d = -d;
        }
        if (!(d > 0)) {
            sim_fem_free(f);
            base_errf(err, errlen, "fem: tet %lld is degenerate", (long long)t);
            return -1;
        }
        base_mat3_inv(Dm, f->Dminv + 9 * t);
        f->vol[t] = d / 6;
        for (int k = 0; k < 4; k++) f->mass[T[k]] += mat->rho * f->vol[t] / 4;
        f->total_mass += mat->rho * f->vol[t];
    }
    return 0;
}

int64_t sim_fem_fix(SimFem *f, const SimRegion *r) {
    int64_t k = 0;
    for (int64_t i = 0; i < f->nn; i++)
        if (sim_region_contains(r, f->X + 3 * i)) f->fixed[i] = true, k++;
    return k;
}

int sim_fem_add_plane(SimFem *f, const SimPlane *p, char *err, size_t errlen) {
    double l = sqrt(p->normal[0] * p->normal[0] + p->normal[1] * p->normal[1] + p->normal[2] * p->normal[2]);
    if (!(l > 0) || f->nplanes >= 8) {
        base_errf(err, errlen, "fem: a plane needs a nonzero normal (and at most 8 planes)");
        return -1;
    }
    SimPlane q = *p;
    for (int i = 0; i < 3; i++) q.normal[i] /= l;
    q.offset /= l;
    f->planes[f->nplanes++] = q;
    return 0;
}

/* ∇N_a (a = 0..3) of tet t: ∇N_{k+1}[j] = Dm⁻¹[k][j], ∇N₀ = −Σ (fem.h) */
static void grad_n(const SimFem *f, int64_t t, double dN[4][3]) {
    const double *D = f->Dminv + 9 * t;
    for (int j = 0; j < 3; j++) {
        dN[1][j] = D[j], dN[2][j] = D[3 + j], dN[3][j] = D[6 + j];
        dN[0][j] = -(D[j] + D[3 + j] + D[6 + j]);
    }
}

static void tet_F(const SimFem *f, const double *x, int64_t t, double dN[4][3], double F[9]) {
    const int32_t *T = f->tets + 4 * t;
    grad_n(f, t, dN);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int a = 0; a < 4; a++) s += x[3 * T[a] + i] * dN[a][j];
            F[3 * i + j] = s;
        }
}

double sim_fem_elastic(const SimFem *f, const double *x, double *grad) {
    double E = 0;
    if (grad) memset(grad, 0, sizeof(double) * 3 * (size_t)f->nn);
    for (int64_t t = 0; t < f->nt; t++) {
        double dN[4][3], F[9], P[9];
        tet_F(f, x, t, dN, F);
        E += f->vol[t] * sim_snh(F, f->mu, f->lam, grad ? P : NULL, NULL);
        if (grad) {
            const int32_t *T = f->tets + 4 * t;
            for (int a = 0; a < 4; a++)
                for (int i = 0; i < 3; i++)
                    grad[3 * T[a] + i] += f->vol[t] * (P[3 * i] * dN[a][0] + P[3 * i + 1] * dN[a][1] + P[3 * i + 2] * dN[a][2]);
        }
    }
    return E;
}

/* ---- the sparse pattern ------------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t find_pos(const cholmod_sparse *K, int64_t row, int64_t col) {
    const int *Ap = K->p, *Ai = K->i;
    int lo = Ap[col], hi = Ap[col + 1] - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (Ai[mid] == row) return mid;
        if (Ai[mid] < row) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static int build_solver(SimFem *f, char *err, size_t errlen) {
    struct SimFemSolver *s = f->sol = calloc(1, sizeof *s);
    if (!s) goto oom;
    cholmod_start(&s->cm);
    s->cm.supernodal = CHOLMOD_SUPERNODAL;
    int64_t nn = f->nn, nt = f->nt;
    s->dof = malloc(sizeof(int64_t) * 3 * (size_t)nn);
    s->g = malloc(sizeof(double) * 3 * (size_t)nn), s->gt = malloc(sizeof(double) * 3 * (size_t)nn);
    s->dx = malloc(sizeof(double) * 3 * (size_t)nn);
    s->xt = malloc(sizeof(double) * 3 * (size_t)nn), s->xtil = malloc(sizeof(double) * 3 * (size_t)nn);
    if (!s->dof || !s->g || !s->gt || !s->dx || !s->xt || !s->xtil) goto oom;
    int64_t nd = 0;
    for (int64_t i = 0; i < nn; i++)
        for (int k = 0; k < 3; k++) s->dof[3 * i + k] = f->fixed[i] ? -1 : nd++;
    s->ndof = nd;
    /* column j's rows: the dofs ≤ j of the nodes sharing a tet with j's node (node adjacency
     * from the tets, one sorted list per node) */
    int64_t *cnt = calloc((size_t)nn + 1, sizeof(int64_t));
    if (!cnt) goto oom;
    for (int64_t t = 0; t < nt; t++)
        for (int a = 0; a < 4; a++) cnt[f->tets[4 * t + a] + 1] += 4;
    for (int64_t i = 0; i < nn; i++) cnt[i + 1] += cnt[i];
    int64_t *adj = malloc(sizeof(int64_t) * (size_t)(cnt[nn] + 1)), *fill = calloc((size_t)nn, sizeof(int64_t));
    int64_t *deg = calloc((size_t)nn, sizeof(int64_t));
    if (!adj || !fill || !deg) {
        free(cnt), free(adj), free(fill), free(deg);
        goto oom;
    }
    for (int64_t t = 0; t < nt; t++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                int64_t i = f->tets[4 * t + a];
                adj[cnt[i] + fill[i]++] = f->tets[4 * t + b];
            }
    for (int64_t i = 0; i < nn; i++) { /* sort, unique */
        int64_t *L = adj + cnt[i], m = fill[i], u = 0;
        qsort(L, (size_t)m, sizeof *L, cmp_i64);
        for (int64_t k = 0; k < m; k++)
            if (!u || L[k] != L[u - 1]) L[u++] = L[k];
        deg[i] = u;
    }
    size_t nnz = 0;
    for (int64_t i = 0; i < nn; i++)
        for (int k = 0; k < 3; k++) {
            int64_t col = s->dof[3 * i + k];
            if (col < 0) continue;
            for (int64_t e = 0; e < deg[i]; e++)
                for (int kk = 0; kk < 3; kk++) {
                    int64_t row = s->dof[3 * adj[cnt[i] + e] + kk];
                    if (row >= 0 && row <= col) nnz++;
                }
        }
    s->K = cholmod_allocate_sparse((size_t)nd, (size_t)nd, nnz, 1, 1, 1, CHOLMOD_REAL, &s->cm);
    if (!s->K) {
        free(cnt), free(adj), free(fill), free(deg);
        goto oom;
    }
    int *Ap = s->K->p, *Ai = s->K->i;
    /* the free dofs are numbered node by node, so walking nodes in order walks columns in order */
    int64_t pos = 0, tmp[3 * 64];
    for (int64_t i = 0; i < nn; i++)
        for (int k = 0; k < 3; k++) {
            int64_t col = s->dof[3 * i + k];
            if (col < 0) continue;
            Ap[col] = (int)pos;
            int64_t m = 0;
            for (int64_t e = 0; e < deg[i]; e++)
                for (int kk = 0; kk < 3; kk++) {
                    int64_t row = s->dof[3 * adj[cnt[i] + e] + kk];
                    if (row >= 0 && row <= col) {
                        if (m < 3 * 64) tmp[m++] = row;
                        else Ai[pos++] = (int)row; /* a node of > 64 neighbours: sorted below */
                    }
                }
            for (int64_t q = 0; q < m; q++) Ai[pos++] = (int)tmp[q];
            /* rows within a column in increasing order */
            int *seg = Ai + Ap[col];
            int64_t len = pos - Ap[col];
            for (int64_t a = 1; a < len; a++) { /* insertion sort: columns hold ~40 entries */
                int v = seg[a];
                int64_t b = a - 1;
                while (b >= 0 && seg[b] > v) seg[b + 1] = seg[b], b--;
                seg[b + 1] = v;
            }
        }
    Ap[nd] = (int)pos;
    free(cnt), free(adj), free(fill), free(deg);
    s->K->sorted = 1, s->K->packed = 1;
    s->tmap = malloc(sizeof(int64_t) * 144 * (size_t)nt);
    s->diag3 = malloc(sizeof(int64_t) * 9 * (size_t)nn);
    if (!s->tmap || !s->diag3) goto oom;
    for (int64_t t = 0; t < nt; t++)
        for (int a = 0; a < 12; a++)
            for (int b = 0; b < 12; b++) {
                int64_t r = s->dof[3 * f->tets[4 * t + a / 3] + a % 3], c = s->dof[3 * f->tets[4 * t + b / 3] + b % 3];
                s->tmap[144 * t + 12 * a + b] = (r >= 0 && c >= 0 && r <= c) ? find_pos(s->K, r, c) : -1;
            }
    for (int64_t i = 0; i < nn; i++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                int64_t r = s->dof[3 * i + a], c = s->dof[3 * i + b];
                s->diag3[9 * i + 3 * a + b] = (r >= 0 && c >= 0 && r <= c) ? find_pos(s->K, r, c) : -1;
            }
    /* one symbolic analysis (AMD/METIS ordering, supernodes) for every step */
    s->L = cholmod_analyze(s->K, &s->cm);
    if (!s->L) {
        base_errf(err, errlen, "fem: CHOLMOD's analysis failed (status %d)", s->cm.status);
        return -1;
    }
    return 0;
oom:
    base_errf(err, errlen, "fem: out of memory building the sparse system");
    return -1;
}

/* ---- the step ---------------------------------------------------------------------------------- */

/* E(x) = ½ (x − x̃)ᵀ M (x − x̃) + dt² [Σ V Ψ − Σ m g·x + Σ_planes k min(0, n·x − h)²]; the gradient
 * (3nn, zero on fixed dofs) and the Hessian values in K when asked. */
static double objective(SimFem *f, const double *x, double dt, double *g, bool hess, int *nproj) {
    struct SimFemSolver *s = f->sol;
    int64_t nn = f->nn;
    double dt2 = dt * dt, E = 0;
    if (g) memset(g, 0, sizeof(double) * 3 * (size_t)nn);
    double *Kx = hess ? s->K->x : NULL;
    if (hess) memset(Kx, 0, sizeof(double) * ((int *)s->K->p)[s->ndof]);
    for (int64_t i = 0; i < nn; i++)
        for (int k = 0; k < 3; k++) {
            double d = x[3 * i + k] - s->xtil[3 * i + k];
            E += 0.5 * f->mass[i] * d * d - dt2 * f->mass[i] * f->gravity[k] * x[3 * i + k];
            if (g) g[3 * i + k] += f->mass[i] * d - dt2 * f->mass[i] * f->gravity[k];
            if (hess && s->diag3[9 * i + 4 * k] >= 0) Kx[s->diag3[9 * i + 4 * k]] += f->mass[i];
        }
    int proj = 0;
    for (int64_t t = 0; t < f->nt; t++) {
        double dN[4][3], F[9], P[9], H[81];
        tet_F(f, x, t, dN, F);
        double V = f->vol[t];
        E += dt2 * V * sim_snh(F, f->mu, f->lam, g ? P : NULL, NULL);
        const int32_t *T = f->tets + 4 * t;
        if (g)
            for (int a = 0; a < 4; a++)
                for (int i = 0; i < 3; i++)
                    g[3 * T[a] + i] += dt2 * V * (P[3 * i] * dN[a][0] + P[3 * i + 1] * dN[a][1] + P[3 * i + 2] * dN[a][2]);
        if (hess) {
            proj += sim_snh_hessian_psd(F, f->mu, f->lam, H) > 0;
            /* K_(a,i),(b,k) = V Σ_jl Ĥ[3i+j][3k+l] ∇N_a[j] ∇N_b[l] */
            double HN[9][4][3]; /* Σ_l Ĥ[(i,j)][(k,l)] ∇N_b[l], indexed [3i+j][b][k] */
            for (int r = 0; r < 9; r++)
                for (int b = 0; b < 4; b++)
                    for (int k = 0; k < 3; k++)
                        HN[r][b][k] = H[9 * r + 3 * k] * dN[b][0] + H[9 * r + 3 * k + 1] * dN[b][1] + H[9 * r + 3 * k + 2] * dN[b][2];
            const int64_t *map = s->tmap + 144 * t;
            for (int a = 0; a < 4; a++)
                for (int i = 0; i < 3; i++)
                    for (int b = 0; b < 4; b++)
                        for (int k = 0; k < 3; k++) {
                            int64_t p = map[12 * (3 * a + i) + 3 * b + k];
                            if (p < 0) continue;
                            Kx[p] += dt2 * V * (dN[a][0] * HN[3 * i][b][k] + dN[a][1] * HN[3 * i + 1][b][k] + dN[a][2] * HN[3 * i + 2][b][k]);
                        }
        }
    }
    for (int pl = 0; pl < f->nplanes; pl++) {
        const SimPlane *P = &f->planes[pl];
        for (int64_t i = 0; i < nn; i++) {
            double d = -P->offset;
            for (int k = 0; k < 3; k++) d += P->normal[k] * x[3 * i + k];
            if (d >= 0) continue;
            E += dt2 * P->stiffness * d * d;
            if (g)
                for (int k = 0; k < 3; k++) g[3 * i + k] += dt2 * 2 * P->stiffness * d * P->normal[k];
            if (hess)
                for (int a = 0; a < 3; a++)
                    for (int b = 0; b < 3; b++)
                        if (s->diag3[9 * i + 3 * a + b] >= 0)
                            Kx[s->diag3[9 * i + 3 * a + b]] += dt2 * 2 * P->stiffness * P->normal[a] * P->normal[b];
        }
    }
    if (g)
        for (int64_t i = 0; i < nn; i++)
            if (f->fixed[i]) g[3 * i] = g[3 * i + 1] = g[3 * i + 2] = 0;
    if (nproj) *nproj = proj;
    return E;
}

/* The step as a problem of the Newton driver (newton.h): a new sparse Hessian and its numeric
 * factorization every iteration (no measure: the stop is on the Newton decrement Δxᵀg of each
 * new direction, before its line search), the gradient with the first Armijo trial only. */
typedef struct {
    SimFem *f;
    double dt;
    cholmod_dense *rhs;
    const SimNewtonProblem *P; /* its g: the driver swaps g and gt as it accepts */
    int projected;
} FemStep;

static int fs_hessian(void *ctx, const double *x, bool lagged, bool fresh_el) {
    (void)lagged, (void)fresh_el;
    FemStep *c = ctx;
    objective(c->f, x, c->dt, NULL, true, &c->projected);
    return 1;
}

static int fs_direction(void *ctx, bool fresh, bool lagged, double *dx) {
    (void)fresh, (void)lagged;
    FemStep *c = ctx;
    struct SimFemSolver *s = c->f->sol;
    /* CHOLMOD's fixed 4-thread regions stay inactive in a one-thread run (base/par.h) */
    int saved = base_par_serial_regions_begin();
    bool ok = cholmod_factorize(s->K, s->L, &s->cm) && s->cm.status == CHOLMOD_OK;
    int64_t n3 = 3 * c->f->nn;
    double *r = c->rhs->x;
    const double *g = c->P->g;
    for (int64_t k = 0; k < n3; k++)
        if (s->dof[k] >= 0) r[s->dof[k]] = -g[k];
    cholmod_dense *sol = ok ? cholmod_solve(CHOLMOD_A, s->L, c->rhs, &s->cm) : NULL;
    base_par_serial_regions_end(saved);
    if (!sol) return 1;
    const double *sx = sol->x;
    for (int64_t k = 0; k < n3; k++) dx[k] = s->dof[k] >= 0 ? sx[s->dof[k]] : 0;
    cholmod_free_dense(&sol, &s->cm);
    return 0;
}

static double fs_trial(void *ctx, const double *xt, double alpha, double *gt) {
    (void)alpha;
    FemStep *c = ctx;
    return objective(c->f, xt, c->dt, gt, false, NULL);
}

static int fs_accept(void *ctx, const double *x, bool have_grad, double Et, double *E, double *g) {
    FemStep *c = ctx;
    *E = have_grad ? Et : objective(c->f, x, c->dt, g, false, NULL);
    return 0;
}

static int fem_step(SimFem *f, double dt, char *err, size_t errlen);

/* single-threaded BLAS in the step, as sim_world_step (base/par.h) */
int sim_fem_step(SimFem *f, double dt, char *err, size_t errlen) {
    int prev = base_par_blas_serial_begin();
    int rc = fem_step(f, dt, err, errlen);
    base_par_blas_serial_end(prev);
    return rc;
}

static int fem_step(SimFem *f, double dt, char *err, size_t errlen) {
    double t0 = base_now();
    if (!f->sol && build_solver(f, err, errlen)) return -1;
    struct SimFemSolver *s = f->sol;
    int64_t n3 = 3 * f->nn;
    SimStepStats st = {0};
    for (int64_t k = 0; k < n3; k++) s->xtil[k] = f->x[k] + (f->fixed[k / 3] ? 0 : dt * f->v[k]);
    double *x = malloc(sizeof(double) * (size_t)n3);
    FemStep ctx = {.f = f, .dt = dt};
    ctx.rhs = cholmod_allocate_dense((size_t)s->ndof, 1, (size_t)s->ndof, CHOLMOD_REAL, &s->cm);
    if (!x || !ctx.rhs) {
        free(x), cholmod_free_dense(&ctx.rhs, &s->cm);
        base_errf(err, errlen, "fem: out of memory");
        return -1;
    }
    memcpy(x, s->xtil, sizeof(double) * (size_t)n3);
    double E = objective(f, x, dt, s->g, false, NULL);
    SimNewtonProblem P = {.ctx = &ctx, .n = n3, .z = x, .g = s->g, .gt = s->gt, .zt = s->xt, .dz = s->dx,
                          .hessian = fs_hessian, .direction = fs_direction, .trial = fs_trial, .accept = fs_accept};
    ctx.P = &P;
    /* the options' iteration, backtracking, tolerance and Armijo numbers; a Hessian every
     * iteration (reuse and lag are the reduced step's), the same |Δxᵀg| < tol · M L² as it */
    SimNewtonPolicy pol = {.max_iters = f->newton.max_iters, .max_backtracks = f->newton.max_backtracks,
                           .max_hessians = f->newton.max_iters, .tol = f->newton.tol, .armijo = f->newton.armijo,
                           .scale = f->total_mass * f->diag * f->diag, .stop_on_direction = true};
    SimNewtonResult res;
    bool stale = false;
    int nrc = sim_newton_solve(&P, &pol, E, &stale, &res);
    s->g = P.g, s->gt = P.gt;
    cholmod_free_dense(&ctx.rhs, &s->cm);
    if (nrc) { /* none of the callbacks above reports one; kept should one come to */
        free(x);
        base_errf(err, errlen, "fem: the Newton solve failed at t = %g", f->t + dt);
        return -1;
    }
    st.iters = res.iters, st.hessians = res.hessians, st.failures = res.failures, st.converged = res.converged;
    st.decrement = res.decrement, st.projected = ctx.projected;
    if (!sim_newton_finite(n3, x)) {
        free(x);
        base_errf(err, errlen, "fem: the state became non-finite at t = %g", f->t + dt);
        return -1;
    }
    sim_newton_velocity(n3, x, dt, f->x, f->v);
    free(x);
    f->t += dt;
    st.seconds = base_now() - t0;
    f->last = st;
    return 0;
}
