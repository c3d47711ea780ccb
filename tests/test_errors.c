/* tests/test_errors.c — a programmer error aborts with one line naming the op, the shapes
 * and the caller's file:line. Each case runs in a child process. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/test.h"

static void bad_broadcast(void *arg) {
    (void)arg;
    Tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32);
    tensor_add(a, b);
}

static void bad_dtype(void *arg) {
    (void)arg;
    Tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F64);
    tensor_mul(a, b);
}

static void bad_matmul(void *arg) {
    (void)arg;
    Tensor *a = tensor_zeros(TENSOR_SHAPE(5, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(4, 2), TENSOR_F32);
    tensor_matmul(a, b);
}

static void bad_device(void *arg) {
    (void)arg;
    Tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    static TensorStorage fake; /* a tensor claiming to live on the GPU */
    fake = *b->storage;
    fake.device = TENSOR_CUDA;
    b->storage = &fake;
    tensor_sub(a, b);
}

static void bad_reshape(void *arg) {
    (void)arg;
    tensor_reshape(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), TENSOR_SHAPE(4, -1));
}

static void expect(void (*fn)(void *), const char *const *needles, int n) {
    char buf[2048];
    int st = test_run_child(fn, NULL, buf, sizeof buf);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "expected an abort, status %d", st);
    CHECK_MSG(strchr(buf, '\n') == buf + strlen(buf) - 1, "expected exactly one line, got: %s", buf);
    for (int i = 0; i < n; i++) CHECK_MSG(strstr(buf, needles[i]), "missing '%s' in: %s", needles[i], buf);
}

/* the reported file:line must be the line of this file that makes the bad call */
static void check_site(const char *buf, const char *call) {
    const char *at = strstr(buf, "(at tests/test_errors.c:");
    CHECK_MSG(at, "no call site in: %s", buf);
    if (!at) return;
    int line = atoi(at + strlen("(at tests/test_errors.c:"));
    FILE *f = fopen("tests/test_errors.c", "r");
    CHECK(f);
    if (!f) return;
    char l[512];
    for (int i = 1; fgets(l, sizeof l, f); i++)
        if (i == line) CHECK_MSG(strstr(l, call), "line %d is '%s', expected the call %s", line, l, call);
    fclose(f);
}

TEST(error_broadcast_names_op_shapes_and_caller) {
    expect(bad_broadcast, (const char *const[]){"anima: add:", "[2, 3]", "[4]", "do not broadcast"}, 4);
    char buf[2048];
    test_run_child(bad_broadcast, NULL, buf, sizeof buf);
    check_site(buf, "tensor_add(a, b)");
}

TEST(error_dtype_mismatch) {
    expect(bad_dtype, (const char *const[]){"anima: mul:", "dtype mismatch", "f32 [2, 3]", "f64 [2, 3]", "test_errors.c"}, 5);
}

TEST(error_matmul_inner_dims) {
    expect(bad_matmul, (const char *const[]){"anima: matmul:", "[5, 3] @ [4, 2]", "test_errors.c"}, 3);
    char buf[2048];
    test_run_child(bad_matmul, NULL, buf, sizeof buf);
    check_site(buf, "tensor_matmul(a, b)");
}

TEST(error_device_mismatch) {
    expect(bad_device, (const char *const[]){"anima: sub:", "device mismatch", "cpu", "cuda"}, 4);
}

TEST(error_bad_reshape) {
    expect(bad_reshape, (const char *const[]){"anima: reshape:", "[2, 3]", "6 elements"}, 3);
}
