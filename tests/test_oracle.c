/* tests/test_oracle.c — anima against PyTorch: every op of tensor/op_table.h (but custom, rand,
 * randn) and the two transformer blocks of nn/functional.h, replayed in f32 and f64 on the
 * inputs of tests/oracle/fixtures/{ops,blocks}.afx and compared, forward and backward, with torch's
 * float64 results (tests/oracle/make_fixtures.py writes them; oracle_io.h has the format).
 *
 * ANIMA_ORACLE_VERBOSE=1 prints every comparison's error (to see the margins); ANIMA_ORACLE_DIR
 * points at another fixture folder.
 *
 * Error metric: test_rel_err, max |anima - torch| / max |torch|. f32 must reach 1e-5 (a few
 * f32 ulps of the largest value after short sums) and f64 1e-10 on the ops; the blocks chain
 * ~20 ops, so 1e-4 in f32 and 1e-9 in f64.
 *
 * Each case below builds the same expression as its namesake in make_fixtures.py, taking the
 * same views (transpose, strided slice, permute) of the stored contiguous inputs. */
#include <stdlib.h>
#include <string.h>

#include "nn/attention.h"
#include "nn/functional.h"
#include "tests/oracle_io.h"
#include "tests/test.h"

#define ORACLE_MAX_IO 8
#define TOL_F32 1e-5
#define TOL_F64 1e-10
#define TOL_BLOCK_F32 1e-4
#define TOL_BLOCK_F64 1e-9

static const char *fixture_path(const char *file, char *buf, size_t n) {
    const char *dir = getenv("ANIMA_ORACLE_DIR");
    snprintf(buf, n, "%s/%s", dir && *dir ? dir : "tests/oracle/fixtures", file);
    return buf;
}

static bool load_fixture(const char *file, OracleFile *f) {
    char path[512], err[512];
    if (!oracle_load(fixture_path(file, path, sizeof path), f, err, sizeof err)) {
        test_fail_at(__FILE__, __LINE__, "%s", err);
        return false;
    }
    return true;
}

/* ---- the cases ------------------------------------------------------------------------------ */

typedef int (*OracleRun)(Tensor **in, Tensor **out, TensorDType dt);
typedef struct {
    const char *name; /* "<op>.<variant>", <op> as in tensor/op_table.h */
    OracleRun run;    /* fills out[], returns how many outputs */
} OracleCase;

#define CASE(op, var) \
    static int oc_##op##__##var(Tensor **in __attribute__((unused)), Tensor **out, TensorDType dt __attribute__((unused)))
#define ENTRY(op, var) {#op "." #var, oc_##op##__##var}
#define ONE(expr) \
    do {          \
        out[0] = (expr); \
        return 1; \
    } while (0)
#define T01(x) tensor_transpose(x, 0, 1)
#define EVERY_OTHER_COL(x, n) tensor_slice(x, 1, 0, n, 2)

/* views and layout */
CASE(reshape, contig) { ONE(tensor_reshape(in[0], TENSOR_SHAPE(-1, 6))); }
CASE(reshape, copy) { ONE(tensor_reshape(T01(in[0]), TENSOR_SHAPE(12))); }
CASE(view, split) { ONE(tensor_view(in[0], TENSOR_SHAPE(2, 2, 3))); }
CASE(permute, 3d) { ONE(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1))); }
CASE(transpose, neg) { ONE(tensor_transpose(in[0], -1, 0)); }
CASE(expand, bcast) { ONE(tensor_expand(in[0], TENSOR_SHAPE(2, 3, 4))); }
CASE(expand, keep) { ONE(tensor_expand(in[0], TENSOR_SHAPE(2, -1, 4))); }
CASE(slice, step) { ONE(tensor_slice(in[0], 1, 1, 6, 2)); }
CASE(slice, neg) { ONE(tensor_slice(in[0], 0, -4, -1, 1)); }
CASE(slice_scatter, step) { ONE(tensor_slice_scatter(in[0], TENSOR_SHAPE(5, 6), 1, 1, 5, 2)); }
CASE(contiguous, perm) {
    Tensor *c = tensor_contiguous(T01(in[0]));
    CHECK(tensor_is_contiguous(c));
    ONE(c);
}
CASE(cast, roundtrip) { ONE(tensor_cast(in[0], dt == TENSOR_F32 ? TENSOR_F64 : TENSOR_F32)); }
CASE(narrow, mid) { ONE(tensor_narrow(in[0], 1, 1, 3)); }
CASE(squeeze, one) { ONE(tensor_squeeze(in[0], 1)); }
CASE(squeeze, noop) { ONE(tensor_squeeze(in[0], 0)); }
CASE(unsqueeze, neg) { ONE(tensor_unsqueeze(in[0], -1)); }
CASE(flatten, inner) { ONE(tensor_flatten(in[0], 1, 2)); }
CASE(flatten, perm) { ONE(tensor_flatten(tensor_permute(in[0], TENSOR_DIMS(1, 0, 2)), 0, 1)); }

/* broadcasting binary: a (4, 3) transposed, b every other column of (3, 8) in .strided */
#define BIN_CASES(op)                                                                            \
    CASE(op, same) { ONE(tensor_##op(in[0], in[1])); }                                           \
    CASE(op, bcast) { ONE(tensor_##op(in[0], in[1])); }                                          \
    CASE(op, scalar) { ONE(tensor_##op(in[0], in[1])); }                                         \
    CASE(op, strided) { ONE(tensor_##op(T01(in[0]), EVERY_OTHER_COL(in[1], 8))); }
BIN_CASES(add)
BIN_CASES(sub)
BIN_CASES(mul)
BIN_CASES(div)
BIN_CASES(pow)
BIN_CASES(maximum)
BIN_CASES(minimum)
BIN_CASES(gelu_backward)
CASE(pow, square) { ONE(tensor_pow(in[0], in[1])); }
CASE(maximum, ties) { ONE(tensor_maximum(in[0], in[1])); }
CASE(minimum, ties) { ONE(tensor_minimum(in[0], in[1])); }

#define CMP_CASES(op)                                                                            \
    CASE(op, bcast) { ONE(tensor_##op(in[0], in[1])); }                                          \
    CASE(op, strided) { ONE(tensor_##op(T01(in[0]), EVERY_OTHER_COL(in[1], 8))); }
CMP_CASES(eq)
CMP_CASES(ne)
CMP_CASES(lt)
CMP_CASES(le)
CMP_CASES(gt)
CMP_CASES(ge)
CASE(eq, i64) { ONE(tensor_eq(in[0], in[1])); }
CASE(ne, i64) { ONE(tensor_ne(in[0], in[1])); }
CASE(where, bcast) { ONE(tensor_where(in[0], in[1], in[2])); }
CASE(where, full) { ONE(tensor_where(in[0], in[1], in[2])); }

/* unary: .strided applies the op to the transpose */
#define UN_CASES(op, call)                                                                       \
    CASE(op, plain) {                                                                            \
        Tensor *x = in[0];                                                                       \
        ONE(call);                                                                               \
    }                                                                                            \
    CASE(op, strided) {                                                                          \
        Tensor *x = T01(in[0]);                                                                  \
        ONE(call);                                                                               \
    }
UN_CASES(neg, tensor_neg(x))
UN_CASES(abs, tensor_abs(x))
UN_CASES(sign, tensor_sign(x))
UN_CASES(exp, tensor_exp(x))
UN_CASES(log, tensor_log(x))
UN_CASES(sqrt, tensor_sqrt(x))
UN_CASES(rsqrt, tensor_rsqrt(x))
UN_CASES(sin, tensor_sin(x))
UN_CASES(cos, tensor_cos(x))
UN_CASES(tanh, tensor_tanh(x))
UN_CASES(sigmoid, tensor_sigmoid(x))
UN_CASES(relu, tensor_relu(x))
UN_CASES(elu, tensor_elu(x, 0.7))
UN_CASES(gelu, tensor_gelu(x))
UN_CASES(gelu_tanh, tensor_gelu_tanh(x))
UN_CASES(softplus, tensor_softplus(x, 1.5, 2.0))
UN_CASES(erf, tensor_erf(x))

/* reductions */
CASE(sum, all) { ONE(tensor_sum(in[0], 0, NULL, false)); }
CASE(sum, dims02) { ONE(tensor_sum(in[0], TENSOR_DIMS(0, 2), false)); }
CASE(sum, keep) { ONE(tensor_sum(in[0], TENSOR_DIMS(-1, 1), true)); }
CASE(sum, strided) { ONE(tensor_sum(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)), TENSOR_DIMS(1), false)); }
CASE(mean, all) { ONE(tensor_mean(in[0], 0, NULL, false)); }
CASE(mean, dims02_keep) { ONE(tensor_mean(in[0], TENSOR_DIMS(0, 2), true)); }
#define MAXMIN_CASES(op)                                                                         \
    CASE(op, dim1) { ONE(tensor_##op(in[0], TENSOR_DIMS(1), false)); }                           \
    CASE(op, dims02_keep) { ONE(tensor_##op(in[0], TENSOR_DIMS(0, 2), true)); }                  \
    CASE(op, all) { ONE(tensor_##op(in[0], TENSOR_DIMS(0, 1, 2), false)); }                      \
    CASE(op, ties) { ONE(tensor_##op(in[0], TENSOR_DIMS(1), false)); }
MAXMIN_CASES(max)
MAXMIN_CASES(min)
CASE(var, dims02) { ONE(tensor_var(in[0], TENSOR_DIMS(0, 2), 1, false)); }
CASE(var, corr0_keep) { ONE(tensor_var(in[0], TENSOR_DIMS(1), 0, true)); }
CASE(var, all) { ONE(tensor_var(in[0], 0, NULL, 1, false)); }
CASE(norm, p2) { ONE(tensor_norm(in[0], 2, TENSOR_DIMS(1), false)); }
CASE(norm, p1_keep) { ONE(tensor_norm(in[0], 1, TENSOR_DIMS(0, 2), true)); }
CASE(norm, pinf) { ONE(tensor_norm(in[0], INFINITY, TENSOR_DIMS(2), false)); }
CASE(norm, p3_all) { ONE(tensor_norm(in[0], 3, 0, NULL, false)); }
CASE(argmax, dim1) { ONE(tensor_argmax(in[0], 1, false)); }
CASE(argmax, keep) { ONE(tensor_argmax(in[0], -1, true)); }
CASE(argmax, all) { ONE(tensor_argmax(in[0], TENSOR_ALL_DIMS, false)); }

/* linear algebra */
CASE(matmul, 2d) { ONE(tensor_matmul(in[0], in[1])); }
CASE(matmul, batched_bcast) { ONE(tensor_matmul(in[0], in[1])); }
CASE(matmul, vec_mat) { ONE(tensor_matmul(in[0], in[1])); }
CASE(matmul, mat_vec) { ONE(tensor_matmul(in[0], in[1])); }
CASE(matmul, dot) { ONE(tensor_matmul(in[0], in[1])); }
CASE(matmul, strided) { ONE(tensor_matmul(T01(in[0]), EVERY_OTHER_COL(in[1], 10))); }
CASE(det3, batch) { ONE(tensor_det3(in[0])); }
CASE(det3, single) { ONE(tensor_det3(in[0])); }
CASE(inv3, batch) { ONE(tensor_inv3(in[0])); }
CASE(inv3, single) { ONE(tensor_inv3(in[0])); }

/* normalization */
#define SOFTMAX_CASES(op)                                                                        \
    CASE(op, last) { ONE(tensor_##op(in[0], -1)); }                                              \
    CASE(op, dim1) { ONE(tensor_##op(in[0], 1)); }                                               \
    CASE(op, strided) { ONE(tensor_##op(tensor_permute(in[0], TENSOR_DIMS(2, 0, 1)), 0)); }
SOFTMAX_CASES(softmax)
SOFTMAX_CASES(log_softmax)
CASE(layer_norm, w_b_2d) { ONE(tensor_layer_norm(in[0], 2, in[1], in[2], 1e-5)); }
CASE(layer_norm, plain) { ONE(tensor_layer_norm(in[0], 1, NULL, NULL, 1e-5)); }
CASE(layer_norm, w_only) { ONE(tensor_layer_norm(in[0], 1, in[1], NULL, 1e-3)); }
CASE(layer_norm_backward, w_2d) { ONE(tensor_layer_norm_backward(in[0], in[1], 2, in[2], 1e-5)); }
CASE(layer_norm_backward, plain) { ONE(tensor_layer_norm_backward(in[0], in[1], 1, NULL, 1e-5)); }
CASE(layer_norm_backward, strided) {
    ONE(tensor_layer_norm_backward(T01(in[0]), EVERY_OTHER_COL(in[1], 12), 1, in[2], 1e-3));
}

/* joining and indexing */
CASE(cat, dim1) { ONE(tensor_cat(3, in, 1)); }
CASE(cat, strided) { ONE(tensor_cat(2, (Tensor *[]){T01(in[0]), in[1]}, 0)); }
CASE(stack, dim1) { ONE(tensor_stack(2, in, 1)); }
CASE(stack, neg) { ONE(tensor_stack(3, in, -1)); }
CASE(split, dim1) { return tensor_split(in[0], 3, 1, out, ORACLE_MAX_IO); }
CASE(index_select, dim1) { ONE(tensor_index_select(in[0], 1, in[1])); }
CASE(index_select, dim0) { ONE(tensor_index_select(in[0], 0, in[1])); }
CASE(gather, dim1) { ONE(tensor_gather(in[0], 1, in[1])); }
CASE(gather, dim0_small) { ONE(tensor_gather(in[0], 0, in[1])); }
CASE(scatter_add, dim1) { ONE(tensor_scatter_add(in[0], 1, in[1], in[2])); }
CASE(scatter_add, bigsrc) { ONE(tensor_scatter_add(in[0], 0, in[1], in[2])); }

/* constructors */
CASE(zeros, 2d) { ONE(tensor_zeros(TENSOR_SHAPE(2, 3), dt)); }
CASE(ones, 2d) { ONE(tensor_ones(TENSOR_SHAPE(3, 2), dt)); }
CASE(full, 2d) { ONE(tensor_full(TENSOR_SHAPE(2, 2), 2.5, dt)); }
CASE(arange, frac) { ONE(tensor_arange(-1.0, 2.0, 0.25, dt)); }
CASE(arange, int) { ONE(tensor_arange(0.0, 5.0, 1.0, dt)); }
CASE(linspace, 7) { ONE(tensor_linspace(-1.0, 2.0, 7, dt)); }
CASE(eye, 4) { ONE(tensor_eye(4, dt)); }

#define BIN_ENTRIES(op) ENTRY(op, same), ENTRY(op, bcast), ENTRY(op, scalar), ENTRY(op, strided)
#define CMP_ENTRIES(op) ENTRY(op, bcast), ENTRY(op, strided)
#define UN_ENTRIES(op) ENTRY(op, plain), ENTRY(op, strided)
#define MAXMIN_ENTRIES(op) ENTRY(op, dim1), ENTRY(op, dims02_keep), ENTRY(op, all), ENTRY(op, ties)
#define SOFTMAX_ENTRIES(op) ENTRY(op, last), ENTRY(op, dim1), ENTRY(op, strided)

static const OracleCase cases[] = {
    ENTRY(reshape, contig), ENTRY(reshape, copy), ENTRY(view, split), ENTRY(permute, 3d),
    ENTRY(transpose, neg), ENTRY(expand, bcast), ENTRY(expand, keep), ENTRY(slice, step),
    ENTRY(slice, neg), ENTRY(slice_scatter, step), ENTRY(contiguous, perm), ENTRY(cast, roundtrip),
    ENTRY(narrow, mid), ENTRY(squeeze, one), ENTRY(squeeze, noop), ENTRY(unsqueeze, neg),
    ENTRY(flatten, inner), ENTRY(flatten, perm),
    BIN_ENTRIES(add), BIN_ENTRIES(sub), BIN_ENTRIES(mul), BIN_ENTRIES(div), BIN_ENTRIES(pow),
    BIN_ENTRIES(maximum), BIN_ENTRIES(minimum), ENTRY(pow, square), ENTRY(maximum, ties),
    ENTRY(minimum, ties), BIN_ENTRIES(gelu_backward),
    CMP_ENTRIES(eq), CMP_ENTRIES(ne), CMP_ENTRIES(lt), CMP_ENTRIES(le), CMP_ENTRIES(gt),
    CMP_ENTRIES(ge), ENTRY(eq, i64), ENTRY(ne, i64), ENTRY(where, bcast), ENTRY(where, full),
    UN_ENTRIES(neg), UN_ENTRIES(abs), UN_ENTRIES(sign), UN_ENTRIES(exp), UN_ENTRIES(log),
    UN_ENTRIES(sqrt), UN_ENTRIES(rsqrt), UN_ENTRIES(sin), UN_ENTRIES(cos), UN_ENTRIES(tanh),
    UN_ENTRIES(sigmoid), UN_ENTRIES(relu), UN_ENTRIES(elu), UN_ENTRIES(gelu),
    UN_ENTRIES(gelu_tanh), UN_ENTRIES(softplus), UN_ENTRIES(erf),
    ENTRY(sum, all), ENTRY(sum, dims02), ENTRY(sum, keep), ENTRY(sum, strided), ENTRY(mean, all),
    ENTRY(mean, dims02_keep), MAXMIN_ENTRIES(max), MAXMIN_ENTRIES(min), ENTRY(var, dims02),
    ENTRY(var, corr0_keep), ENTRY(var, all), ENTRY(norm, p2), ENTRY(norm, p1_keep),
    ENTRY(norm, pinf), ENTRY(norm, p3_all), ENTRY(argmax, dim1), ENTRY(argmax, keep),
    ENTRY(argmax, all),
    ENTRY(matmul, 2d), ENTRY(matmul, batched_bcast), ENTRY(matmul, vec_mat), ENTRY(matmul, mat_vec),
    ENTRY(matmul, dot), ENTRY(matmul, strided), ENTRY(det3, batch), ENTRY(det3, single),
    ENTRY(inv3, batch), ENTRY(inv3, single),
    SOFTMAX_ENTRIES(softmax), SOFTMAX_ENTRIES(log_softmax), ENTRY(layer_norm, w_b_2d),
    ENTRY(layer_norm, plain), ENTRY(layer_norm, w_only), ENTRY(layer_norm_backward, w_2d),
    ENTRY(layer_norm_backward, plain), ENTRY(layer_norm_backward, strided),
    ENTRY(cat, dim1), ENTRY(cat, strided), ENTRY(stack, dim1), ENTRY(stack, neg), ENTRY(split, dim1),
    ENTRY(index_select, dim1), ENTRY(index_select, dim0), ENTRY(gather, dim1),
    ENTRY(gather, dim0_small), ENTRY(scatter_add, dim1), ENTRY(scatter_add, bigsrc),
    ENTRY(zeros, 2d), ENTRY(ones, 2d), ENTRY(full, 2d), ENTRY(arange, frac), ENTRY(arange, int),
    ENTRY(linspace, 7), ENTRY(eye, 4),
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- replay and compare -------------------------------------------------------------------- */

static const OracleArray *find_fmt(const OracleFile *f, const char *fmt, const char *a, int k) {
    char name[256];
    snprintf(name, sizeof name, fmt, a, k);
    return oracle_find(f, name);
}

static bool same_shape(const Tensor *t, const OracleArray *a) {
    if (t->ndim != a->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (t->shape[i] != a->shape[i]) return false;
    return true;
}

/* Compares t with the reference array; returns false (and reports) on a mismatch. */
static bool compare(const char *what, const char *name, int k, const Tensor *t, const OracleArray *ref, double tol,
                    const char *dtname) {
    char sb[128], sr[128], label[96];
    if (k >= 0) snprintf(label, sizeof label, "%s%d", what, k);
    else snprintf(label, sizeof label, "%s", what);
    Tensor *r = oracle_tensor(ref, TENSOR_F64);
    if (!same_shape(t, ref)) {
        test_fail_at(__FILE__, __LINE__, "%s (%s): %s has shape %s, torch's is %s", name, dtname, label,
                     tensor_shape_str(t, sb), tensor_shape_str(r, sr));
        return false;
    }
    double err = test_rel_err(t, r);
    if (getenv("ANIMA_ORACLE_VERBOSE")) fprintf(stderr, "    %-24s %s %-16s rel err %.3g\n", name, dtname, label, err);
    if (!(err <= tol)) {
        test_fail_at(__FILE__, __LINE__, "%s (%s): %s rel err %.3g > %.0e", name, dtname, label, err, tol);
        return false;
    }
    return true;
}

/* One case in one dtype; false when anything disagrees with torch. */
static bool replay(const OracleFile *f, const OracleCase *c, TensorDType dt, double tol) {
    const char *dn = tensor_dtype_name(dt);
    TensorScope *scope = tensor_scope_begin();
    Tensor *in[ORACLE_MAX_IO] = {0}, *out[ORACLE_MAX_IO] = {0}, *leaves[ORACLE_MAX_IO], *ws[ORACLE_MAX_IO];
    const OracleArray *gref[ORACLE_MAX_IO];
    int n_in = 0, n_grad = 0, grad_of[ORACLE_MAX_IO];
    const OracleArray *a;
    while (n_in < ORACLE_MAX_IO && (a = find_fmt(f, "%s/in%d", c->name, n_in))) {
        in[n_in] = oracle_tensor(a, dt);
        if ((gref[n_grad] = find_fmt(f, "%s/grad%d", c->name, n_in))) {
            leaves[n_grad] = tensor_requires_grad(in[n_in], true);
            grad_of[n_grad++] = n_in;
        }
        n_in++;
    }
    int n_out = c->run(in, out, dt), n_ref = 0;
    while (n_ref < ORACLE_MAX_IO && find_fmt(f, "%s/out%d", c->name, n_ref)) n_ref++;
    bool ok = true;
    if (n_out != n_ref) {
        test_fail_at(__FILE__, __LINE__, "%s (%s): %d outputs, torch has %d", c->name, dn, n_out, n_ref);
        ok = false;
    }
    for (int j = 0; ok && j < n_out; j++) {
        const OracleArray *ref = find_fmt(f, "%s/out%d", c->name, j);
        TensorDType want = ref->dtype == ORACLE_I64 ? TENSOR_I64 : dt;
        if (strncmp(c->name, "cast.", 5) != 0 && out[j]->dtype != want) {
            test_fail_at(__FILE__, __LINE__, "%s (%s): out%d is %s, expected %s", c->name, dn, j,
                         tensor_dtype_name(out[j]->dtype), tensor_dtype_name(want));
            ok = false;
        }
        ok = compare("out", c->name, j, out[j], ref, tol, dn) && ok;
    }
    if (ok && n_grad) {
        for (int j = 0; j < n_out; j++) {
            const OracleArray *w = find_fmt(f, "%s/w%d", c->name, j);
            if (!w) {
                test_fail_at(__FILE__, __LINE__, "%s: fixture has grads but no w%d", c->name, j);
                ok = false;
                break;
            }
            ws[j] = oracle_tensor(w, out[j]->dtype);
        }
        Tensor *grads[ORACLE_MAX_IO] = {0};
        if (ok) ag_grad(n_out, out, ws, n_grad, leaves, grads, false);
        for (int k = 0; ok && k < n_grad; k++) {
            Tensor *g = grads[k] ? grads[k] : tensor_zeros_like(leaves[k]); /* unreachable: zero */
            if (g->dtype != leaves[k]->dtype) {
                test_fail_at(__FILE__, __LINE__, "%s (%s): grad%d is %s", c->name, dn, grad_of[k],
                             tensor_dtype_name(g->dtype));
                ok = false;
            }
            ok = compare("grad", c->name, grad_of[k], g, gref[k], tol, dn) && ok;
        }
    }
    tensor_scope_end(scope);
    return ok;
}

static void replay_all(TensorDType dt, double tol) {
    OracleFile f;
    if (!load_fixture("ops.afx", &f)) return;
    int bad = 0;
    for (int i = 0; i < N_CASES; i++) {
        if (!find_fmt(&f, "%s/out%d", cases[i].name, 0)) {
            test_fail_at(__FILE__, __LINE__, "%s: no fixture (regenerate with tests/oracle/make_fixtures.py)",
                         cases[i].name);
            bad++;
            continue;
        }
        bad += !replay(&f, &cases[i], dt, tol);
    }
    if (bad) fprintf(stderr, "    %d of %d cases disagree with torch in %s\n", bad, N_CASES, tensor_dtype_name(dt));
    oracle_free(&f);
}

TEST(oracle_ops_f32) { replay_all(TENSOR_F32, TOL_F32); }
TEST(oracle_ops_f64) { replay_all(TENSOR_F64, TOL_F64); }

/* ---- the fused ops: against plain references ----------------------------------------------------
 * The op table's fused kernels (attention, optim_sgd, optim_adam, gram, lincomb) have no torch
 * fixture (torch is not installed where the fixtures would be regenerated; torch's fused
 * kernels are other computations anyway). Each is replayed here against a plain double loop
 * written from the published rule (torch.optim's documented update, softmax(QKᵀ/√d)V), on
 * random inputs with strided or aliased operands where the op allows them, over several steps
 * for the optimizers. Same metric and tolerances as the torch cases. */

static double ref_at(const double *x, int64_t i) { return x[i]; }

/* x as a double array (any dtype, any layout) */
static double *ref_array(const Tensor *x) {
    double *a = malloc(sizeof(double) * (size_t)(tensor_numel(x) + 1));
    tensor_to_f64_array(x, a);
    return a;
}

static Tensor *ref_tensor(int nd, const int64_t *shape, const double *v, TensorDType dt) {
    return tensor_from_f64(nd, shape, dt, v);
}

static bool ref_compare(const char *name, const Tensor *got, const Tensor *want, TensorDType dt) {
    double tol = dt == TENSOR_F32 ? TOL_F32 : TOL_F64, err = test_rel_err(got, want);
    if (getenv("ANIMA_ORACLE_VERBOSE")) fprintf(stderr, "    %-24s %s rel err %.3g\n", name, tensor_dtype_name(dt), err);
    if (!(err <= tol)) {
        test_fail_at(__FILE__, __LINE__, "%s (%s): rel err %.3g > %.0e against the plain reference", name,
                     tensor_dtype_name(dt), err, tol);
        return false;
    }
    return true;
}

/* attention: q every other row of a (2, 10, 12) tensor, 3 heads of d = 4 */
static bool ref_attention(TensorDType dt) {
    const int64_t B = 2, Tq = 5, Tk = 7, C = 12, H = 3, d = C / H;
    Tensor *qfull = tensor_randn(TENSOR_SHAPE(B, 2 * Tq, C), dt), *k = tensor_randn(TENSOR_SHAPE(B, Tk, C), dt);
    Tensor *v = tensor_randn(TENSOR_SHAPE(B, Tk, C), dt), *q = tensor_slice(qfull, 1, 0, 2 * Tq, 2);
    Tensor *got = nn_attention_tiled(q, k, v, (int)H);
    double *Q = ref_array(q), *K = ref_array(k), *V = ref_array(v), o[2 * 5 * 12], s[7];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Tq; i++) {
                double mx = -INFINITY, den = 0;
                for (int64_t j = 0; j < Tk; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < d; c++)
                        acc += ref_at(Q, (b * Tq + i) * C + h * d + c) * ref_at(K, (b * Tk + j) * C + h * d + c);
                    s[j] = acc / sqrt((double)d);
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int64_t j = 0; j < Tk; j++) den += s[j] = exp(s[j] - mx);
                for (int64_t c = 0; c < d; c++) {
                    double acc = 0;
                    for (int64_t j = 0; j < Tk; j++) acc += s[j] / den * V[(b * Tk + j) * C + h * d + c];
                    o[(b * Tq + i) * C + h * d + c] = acc;
                }
            }
    free(Q), free(K), free(V);
    return ref_compare("attention.strided_q", got, ref_tensor(TENSOR_SHAPE(B, Tq, C), o, TENSOR_F64), dt);
}

/* torch.optim.SGD's documented rule, 3 steps: d = g + λθ; b = μb + d (b₁ = d); d = b, or
 * d + μb with Nesterov; θ −= lr·d */
static bool ref_optim_sgd(TensorDType dt, double mu, bool nesterov, double wd, const char *name) {
    enum { N = 37 };
    double lr = 0.1, W[N], Bf[N];
    Tensor *w = tensor_randn(TENSOR_SHAPE(N), dt), *buf = mu != 0 ? tensor_zeros(TENSOR_SHAPE(N), dt) : NULL;
    tensor_to_f64_array(w, W);
    for (int t = 0; t < 3; t++) {
        Tensor *g = tensor_randn(TENSOR_SHAPE(N), dt);
        double G[N];
        tensor_to_f64_array(g, G);
        tensor_optim_sgd_(w, g, buf, lr, mu, nesterov, wd);
        for (int j = 0; j < N; j++) {
            double dj = G[j] + wd * W[j];
            if (mu != 0) {
                Bf[j] = t == 0 ? dj : mu * Bf[j] + dj;
                if (dt == TENSOR_F32) Bf[j] = (float)Bf[j];
                dj = nesterov ? dj + mu * Bf[j] : Bf[j];
            }
            W[j] -= lr * dj;
            if (dt == TENSOR_F32) W[j] = (float)W[j];
        }
    }
    bool ok = ref_compare(name, w, ref_tensor(TENSOR_SHAPE(N), W, TENSOR_F64), dt);
    if (buf) ok = ref_compare(name, buf, ref_tensor(TENSOR_SHAPE(N), Bf, TENSOR_F64), dt) && ok;
    return ok;
}

/* torch.optim.Adam / AdamW's documented rule, 3 steps (t = 1..3): AdamW θ ← θ(1 − lr·λ), Adam
 * g ← g + λθ; m ← β1 m + (1−β1) g; v ← β2 v + (1−β2) g²; θ ← θ − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε) */
static bool ref_optim_adam(TensorDType dt, bool adamw, double wd, const char *name) {
    enum { N = 41 };
    double lr = 0.05, b1 = 0.9, b2 = 0.99, eps = 1e-8, W[N], M[N] = {0}, Vs[N] = {0};
    Tensor *w = tensor_randn(TENSOR_SHAPE(N), dt), *m = tensor_zeros(TENSOR_SHAPE(N), dt), *v = tensor_zeros(TENSOR_SHAPE(N), dt);
    tensor_to_f64_array(w, W);
    for (int t = 1; t <= 3; t++) {
        Tensor *g = tensor_randn(TENSOR_SHAPE(N), dt);
        double G[N], bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
        tensor_to_f64_array(g, G);
        tensor_optim_adam_(w, g, m, v, b1, b2, eps, adamw ? 0 : wd, adamw ? 1 - lr * wd : 1, lr / bc1, sqrt(bc2));
        for (int j = 0; j < N; j++) {
            double gj = G[j] + (adamw ? 0 : wd * W[j]);
            if (adamw) W[j] *= 1 - lr * wd;
            M[j] = b1 * M[j] + (1 - b1) * gj;
            Vs[j] = b2 * Vs[j] + (1 - b2) * gj * gj;
            W[j] -= lr / bc1 * M[j] / (sqrt(Vs[j]) / sqrt(bc2) + eps);
            if (dt == TENSOR_F32) W[j] = (float)W[j], M[j] = (float)M[j], Vs[j] = (float)Vs[j];
        }
    }
    bool ok = ref_compare(name, w, ref_tensor(TENSOR_SHAPE(N), W, TENSOR_F64), dt);
    ok = ref_compare(name, m, ref_tensor(TENSOR_SHAPE(N), M, TENSOR_F64), dt) && ok;
    return ref_compare(name, v, ref_tensor(TENSOR_SHAPE(N), Vs, TENSOR_F64), dt) && ok;
}

/* every inner product of k = 4 vectors of 300 elements, in double */
static bool ref_gram(TensorDType dt) {
    enum { K = 4, N = 300 };
    Tensor *x[K];
    double X[K][N], got[K * (K + 1) / 2], want[K * (K + 1) / 2];
    for (int i = 0; i < K; i++) x[i] = tensor_randn(TENSOR_SHAPE(N), dt), tensor_to_f64_array(x[i], X[i]);
    tensor_gram(K, x, got);
    for (int a = 0, q = 0; a < K; a++)
        for (int b = a; b < K; b++, q++) {
            want[q] = 0;
            for (int j = 0; j < N; j++) want[q] += X[a][j] * X[b][j];
        }
    /* the sums are double for either dtype: the f64 tolerance */
    return ref_compare("gram.k4", ref_tensor(TENSOR_SHAPE(K * (K + 1) / 2), got, TENSOR_F64),
                       ref_tensor(TENSOR_SHAPE(K * (K + 1) / 2), want, TENSOR_F64), TENSOR_F64);
}

/* out = Σ coef_i x_i with out aliasing x_0 */
static bool ref_lincomb(TensorDType dt) {
    enum { K = 3, N = 77 };
    Tensor *x[K];
    double X[K][N], want[N], coef[K] = {0.5, -1.25, 3.0};
    for (int i = 0; i < K; i++) x[i] = tensor_randn(TENSOR_SHAPE(N), dt), tensor_to_f64_array(x[i], X[i]);
    tensor_lincomb_(x[0], K, coef, x);
    for (int j = 0; j < N; j++) want[j] = coef[0] * X[0][j] + coef[1] * X[1][j] + coef[2] * X[2][j];
    return ref_compare("lincomb.alias", x[0], ref_tensor(TENSOR_SHAPE(N), want, TENSOR_F64), dt);
}

typedef struct {
    const char *name; /* "<op>.<variant>" like the fixture cases */
    bool (*run)(TensorDType dt);
} RefCase;

static bool rc_attention(TensorDType dt) { return ref_attention(dt); }
static bool rc_sgd_plain(TensorDType dt) { return ref_optim_sgd(dt, 0, false, 0, "optim_sgd.plain"); }
static bool rc_sgd_nesterov(TensorDType dt) { return ref_optim_sgd(dt, 0.9, true, 0.01, "optim_sgd.nesterov_wd"); }
static bool rc_sgd_momentum(TensorDType dt) { return ref_optim_sgd(dt, 0.8, false, 0, "optim_sgd.momentum"); }
static bool rc_adam_l2(TensorDType dt) { return ref_optim_adam(dt, false, 0.01, "optim_adam.l2"); }
static bool rc_adamw(TensorDType dt) { return ref_optim_adam(dt, true, 0.1, "optim_adam.adamw"); }

static const RefCase ref_cases[] = {
    {"attention.strided_q", rc_attention}, {"optim_sgd.plain", rc_sgd_plain},
    {"optim_sgd.momentum", rc_sgd_momentum}, {"optim_sgd.nesterov_wd", rc_sgd_nesterov},
    {"optim_adam.l2", rc_adam_l2},          {"optim_adam.adamw", rc_adamw},
    {"gram.k4", ref_gram},                  {"lincomb.alias", ref_lincomb},
};
#define N_REF_CASES ((int)(sizeof ref_cases / sizeof *ref_cases))

TEST(oracle_fused_ops_reference) {
    TensorDType dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < N_REF_CASES; i++) {
            TensorScope *s = tensor_scope_begin();
            tensor_manual_seed(4242 + (uint64_t)i);
            ref_cases[i].run(dts[t]);
            tensor_scope_end(s);
        }
}

/* An op in the table without a fixture case (or, for the fused ops, a reference case) fails
 * here, by name; so does a fixture case without a C replay (the two lists are written by hand
 * and must stay in step). */
TEST(oracle_covers_every_op) {
    OracleFile f;
    if (!load_fixture("ops.afx", &f)) return;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        if (op == TENSOR_OP_CUSTOM || op == TENSOR_OP_RAND || op == TENSOR_OP_RANDN) continue;
        const char *name = tensor_op_table[op].name;
        size_t len = strlen(name);
        bool found = false;
        for (int i = 0; i < N_CASES && !found; i++)
            found = !strncmp(cases[i].name, name, len) && cases[i].name[len] == '.' &&
                    find_fmt(&f, "%s/out%d", cases[i].name, 0);
        for (int i = 0; i < N_REF_CASES && !found; i++)
            found = !strncmp(ref_cases[i].name, name, len) && ref_cases[i].name[len] == '.';
        CHECK_MSG(found, "op '%s' has no oracle case (add one to tests/oracle/make_fixtures.py and tests/test_oracle.c, "
                         "or a plain reference case to ref_cases)",
                  name);
    }
    for (int a = 0; a < f.n; a++) {
        const char *nm = f.arrays[a].name, *slash = strrchr(nm, '/');
        if (!slash || strcmp(slash, "/out0") != 0) continue;
        bool found = false;
        for (int i = 0; i < N_CASES && !found; i++)
            found = strlen(cases[i].name) == (size_t)(slash - nm) && !strncmp(cases[i].name, nm, (size_t)(slash - nm));
        CHECK_MSG(found, "fixture case '%.*s' has no replay in tests/test_oracle.c", (int)(slash - nm), nm);
    }
    oracle_free(&f);
}

/* ---- transformer blocks ---------------------------------------------------------------------- */

typedef struct {
    const char *name;
    Tensor **slot;
} BlockParam;

/* Loads every named parameter (and input) into its slot, requiring grad; replays `forward`
 * and compares out and every gradient. */
static void block_check(const OracleFile *f, const char *prefix, BlockParam *ps, int np,
                        Tensor *(*forward)(void *), void *user, TensorDType dt, double tol) {
    const char *dn = tensor_dtype_name(dt);
    char name[128];
    TensorScope *scope = tensor_scope_begin();
    Tensor *leaves[32];
    for (int i = 0; i < np; i++) {
        snprintf(name, sizeof name, "%s/%s", prefix, ps[i].name);
        const OracleArray *a = oracle_find(f, name);
        if (!a) {
            test_fail_at(__FILE__, __LINE__, "blocks.afx: no array '%s'", name);
            tensor_scope_end(scope);
            return;
        }
        *ps[i].slot = leaves[i] = tensor_requires_grad(oracle_tensor(a, dt), true);
    }
    Tensor *out = forward(user);
    snprintf(name, sizeof name, "%s/out", prefix);
    const OracleArray *ref = oracle_find(f, name);
    snprintf(name, sizeof name, "%s/w", prefix);
    const OracleArray *w = oracle_find(f, name);
    if (!ref || !w) {
        test_fail_at(__FILE__, __LINE__, "blocks.afx: %s/out or %s/w missing", prefix, prefix);
        tensor_scope_end(scope);
        return;
    }
    bool ok = compare("out", prefix, -1, out, ref, tol, dn);
    Tensor *grads[32] = {0}, *wt = oracle_tensor(w, dt);
    ag_grad(1, &out, &wt, np, leaves, grads, false);
    for (int i = 0; i < np; i++) {
        snprintf(name, sizeof name, "%s/grad_%s", prefix, ps[i].name);
        const OracleArray *g = oracle_find(f, name);
        if (!g || !grads[i]) {
            test_fail_at(__FILE__, __LINE__, "%s (%s): no gradient for %s (%s)", prefix, dn, ps[i].name,
                         g ? "anima" : "fixture");
            ok = false;
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "grad_%s", ps[i].name);
        ok = compare(what, prefix, -1, grads[i], g, tol, dn) && ok;
    }
    tensor_scope_end(scope);
}

static int64_t config_at(const OracleFile *f, const char *prefix, int i) {
    char name[64];
    snprintf(name, sizeof name, "%s/config", prefix);
    const OracleArray *a = oracle_find(f, name);
    if (!a || a->dtype != ORACLE_I64 || a->numel <= i) return -1;
    int64_t v;
    memcpy(&v, (const char *)a->data + 8 * i, 8);
    return v;
}

typedef struct {
    Tensor *x, *ctx;
    NnSelfBlockWeights s;
    NnCrossBlockWeights c;
    int heads;
} BlockRun;

static Tensor *self_forward(void *u) {
    BlockRun *r = u;
    return nn_self_block(r->x, &r->s, r->heads);
}

static Tensor *cross_forward(void *u) {
    BlockRun *r = u;
    return nn_cross_block(r->x, r->ctx, &r->c, r->heads);
}

static void self_block_test(TensorDType dt, double tol) {
    OracleFile f;
    if (!load_fixture("blocks.afx", &f)) return;
    BlockRun r = {.heads = (int)config_at(&f, "self", 3)};
    CHECK_MSG(r.heads > 0, "blocks.afx: self/config missing");
    BlockParam ps[] = {
        {"x", &r.x},           {"ln1_w", &r.s.ln1_w},   {"ln1_b", &r.s.ln1_b}, {"qkv_w", &r.s.qkv_w},
        {"qkv_b", &r.s.qkv_b}, {"proj_w", &r.s.proj_w}, {"proj_b", &r.s.proj_b}, {"ln2_w", &r.s.ln2_w},
        {"ln2_b", &r.s.ln2_b}, {"fc_w", &r.s.fc_w},     {"fc_b", &r.s.fc_b},   {"fc2_w", &r.s.fc2_w},
        {"fc2_b", &r.s.fc2_b},
    };
    if (r.heads > 0) block_check(&f, "self", ps, (int)(sizeof ps / sizeof ps[0]), self_forward, &r, dt, tol);
    oracle_free(&f);
}

static void cross_block_test(TensorDType dt, double tol) {
    OracleFile f;
    if (!load_fixture("blocks.afx", &f)) return;
    BlockRun r = {.heads = (int)config_at(&f, "cross", 3)};
    CHECK_MSG(r.heads > 0, "blocks.afx: cross/config missing");
    BlockParam ps[] = {
        {"x", &r.x},             {"ctx", &r.ctx},         {"lnq_w", &r.c.lnq_w},   {"lnq_b", &r.c.lnq_b},
        {"lnkv_w", &r.c.lnkv_w}, {"lnkv_b", &r.c.lnkv_b}, {"q_w", &r.c.q_w},       {"q_b", &r.c.q_b},
        {"kv_w", &r.c.kv_w},     {"kv_b", &r.c.kv_b},     {"proj_w", &r.c.proj_w}, {"proj_b", &r.c.proj_b},
        {"ln2_w", &r.c.ln2_w},   {"ln2_b", &r.c.ln2_b},   {"fc_w", &r.c.fc_w},     {"fc_b", &r.c.fc_b},
        {"fc2_w", &r.c.fc2_w},   {"fc2_b", &r.c.fc2_b},
    };
    if (r.heads > 0) block_check(&f, "cross", ps, (int)(sizeof ps / sizeof ps[0]), cross_forward, &r, dt, tol);
    oracle_free(&f);
}

TEST(oracle_self_block_f32) { self_block_test(TENSOR_F32, TOL_BLOCK_F32); }
TEST(oracle_self_block_f64) { self_block_test(TENSOR_F64, TOL_BLOCK_F64); }
TEST(oracle_cross_block_f32) { cross_block_test(TENSOR_F32, TOL_BLOCK_F32); }
TEST(oracle_cross_block_f64) { cross_block_test(TENSOR_F64, TOL_BLOCK_F64); }

/* ---- the reader on malformed input ------------------------------------------------------------ */

typedef struct {
    unsigned char b[4096];
    size_t n;
} Buf;

static void put(Buf *b, const void *p, size_t n) {
    if (b->n + n <= sizeof b->b) memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void put_le(Buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        put(b, &c, 1);
    }
}
static void put_record(Buf *b, const char *name, int dtype, int ndim, const int64_t *shape, int64_t numel) {
    put_le(b, strlen(name), 2);
    put(b, name, strlen(name));
    put_le(b, (uint64_t)dtype, 1);
    put_le(b, (uint64_t)ndim, 1);
    for (int i = 0; i < ndim; i++) put_le(b, (uint64_t)shape[i], 8);
    for (int64_t i = 0; i < numel; i++) {
        double v = (double)i + 0.5;
        uint64_t u;
        memcpy(&u, &v, 8);
        put_le(b, dtype == 0 ? u : (uint64_t)i, 8);
    }
}
static void put_header(Buf *b, uint32_t count) {
    put(b, "ANIMAFX1", 8);
    put_le(b, count, 4);
}

static bool parses(const Buf *b, char *err, size_t errsize) {
    OracleFile f;
    bool ok = oracle_parse(b->b, b->n, "test", &f, err, errsize);
    if (ok) oracle_free(&f);
    return ok;
}

#define EXPECT_REJECT(buf, why)                                                                    \
    do {                                                                                          \
        char err_[256] = "";                                                                      \
        CHECK_MSG(!parses(&(buf), err_, sizeof err_), "accepted a file with %s", why);            \
        CHECK_MSG(strncmp(err_, "test: ", 6) == 0, "message for %s does not name the file: '%s'", why, err_); \
    } while (0)

TEST(oracle_reader_rejects_malformed) {
    Buf good = {0};
    put_header(&good, 2);
    put_record(&good, "a/in0", 0, 2, (int64_t[]){2, 3}, 6);
    put_record(&good, "a/idx", 1, 0, NULL, 1);
    OracleFile f;
    char err[256];
    CHECK_MSG(oracle_parse(good.b, good.n, "test", &f, err, sizeof err), "good file rejected: %s", err);
    if (f.n == 2) {
        const OracleArray *a = oracle_find(&f, "a/in0");
        CHECK(a && a->ndim == 2 && a->shape[1] == 3 && a->numel == 6);
        if (a) {
            Tensor *t = oracle_tensor(a, TENSOR_F32);
            CHECK_NEAR(tensor_get(t, (int64_t[]){1, 2}), 5.5, 0);
        }
        CHECK(oracle_find(&f, "a/idx") && oracle_find(&f, "a/idx")->dtype == ORACLE_I64);
        CHECK(!oracle_find(&f, "a/nope"));
        oracle_free(&f);
    }
    /* every strict prefix of a good file is truncated somewhere */
    for (size_t n = 0; n < good.n; n++) {
        Buf t = good;
        t.n = n;
        CHECK_MSG(!parses(&t, err, sizeof err), "accepted the first %zu of %zu bytes", n, good.n);
    }
    /* any single corrupted byte is either accepted or rejected, never a crash (run under ASan) */
    for (size_t i = 0; i < good.n; i++) {
        static const unsigned char vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
        for (size_t v = 0; v < sizeof vals; v++) {
            Buf t = good;
            t.b[i] = vals[v];
            (void)parses(&t, err, sizeof err);
        }
    }
    Buf b = good;
    b.b[0] = 'X';
    EXPECT_REJECT(b, "a bad magic");
    b = good;
    put_le(&b, 0, 1);
    EXPECT_REJECT(b, "a trailing byte");
    b = (Buf){0};
    put_header(&b, 0xffffffffu);
    EXPECT_REJECT(b, "a huge record count");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "", 0, 0, NULL, 1);
    EXPECT_REJECT(b, "an empty name");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 7, 0, NULL, 1);
    EXPECT_REJECT(b, "an unknown dtype");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 0, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, 1);
    EXPECT_REJECT(b, "9 dims");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 0, 1, (int64_t[]){-1}, 0);
    EXPECT_REJECT(b, "a negative size");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 0, 4, (int64_t[]){INT64_MAX, INT64_MAX, 4, 3}, 1);
    EXPECT_REJECT(b, "an element count that overflows");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 0, 2, (int64_t[]){(int64_t)1 << 61, 8}, 0);
    EXPECT_REJECT(b, "a byte count that overflows");
    b = (Buf){0};
    put_header(&b, 2);
    put_record(&b, "x", 0, 0, NULL, 1);
    put_record(&b, "x", 0, 0, NULL, 1);
    EXPECT_REJECT(b, "a duplicate name");
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "ab", 0, 0, NULL, 1);
    b.b[15] = 0; /* the name's second byte: after the 12-byte header and the u16 length */
    EXPECT_REJECT(b, "a NUL inside a name");
    /* a zero-size dim needs no data, even after a saturating product */
    b = (Buf){0};
    put_header(&b, 1);
    put_record(&b, "x", 0, 3, (int64_t[]){INT64_MAX, 0, INT64_MAX}, 0);
    CHECK_MSG(parses(&b, err, sizeof err), "rejected an empty array: %s", err);
    /* a missing file is an error with a message, not a crash */
    CHECK(!oracle_load("tests/oracle/fixtures/does-not-exist.afx", &f, err, sizeof err));
    CHECK(strstr(err, "does-not-exist.afx") != NULL);
}
