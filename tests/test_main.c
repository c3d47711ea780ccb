/* tests/test_main.c — the runner: forks a child per test, prints a line each and the total. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "tensor/backend.h"
#include "tests/test.h"

/* SANITIZE=1: a test child ends in _exit, which skips LeakSanitizer's check at exit; run it
 * explicitly, so a leak fails the test that made it (as valgrind's leak check does). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_LSAN 1
#endif
#endif
#ifdef TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#define MAX_TESTS 1024

static struct {
    const char *name, *file;
    TestFn fn;
} tests[MAX_TESTS];
static int ntests, failures_in_child;
static bool quick, cuda, no_leak_check;

void test_register(const char *name, const char *file, TestFn fn) {
    if (ntests < MAX_TESTS) tests[ntests].name = name, tests[ntests].file = file, tests[ntests++].fn = fn;
}

bool test_quick(void) { return quick; }
bool test_cuda(void) { return cuda; }
void test_no_leak_check(const char *why) {
#ifdef TEST_LSAN
    printf("    no LeakSanitizer check: %s\n", why);
#else
    (void)why;
#endif
    no_leak_check = true;
}

const char *test_anima_bin(void) {
    const char *b = getenv("ANIMA");
    return b && *b ? b : "./anima";
}

int test_run_capture(const char *cmd, char *out, size_t n) {
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    if (!p) {
        if (n) out[0] = 0;
        return -1;
    }
    size_t got = 0, r;
    while (got + 1 < n && (r = fread(out + got, 1, n - 1 - got, p)) > 0) got += r;
    if (n) out[got] = 0;
    char sink[4096]; /* the rest, so the command never blocks on a full pipe */
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

void test_fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failures_in_child++;
}

double test_rel_err(const Tensor *a, const Tensor *b) {
    int64_t n = tensor_numel(b);
    if (tensor_numel(a) != n) return INFINITY;
    double *x = malloc(sizeof(double) * (size_t)(n + 1)), *y = malloc(sizeof(double) * (size_t)(n + 1));
    tensor_to_f64_array(a, x);
    tensor_to_f64_array(b, y);
    double err = 0, ref = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]);
        if (d > err || isnan(d)) err = isnan(d) ? INFINITY : d;
        if (fabs(y[i]) > ref) ref = fabs(y[i]);
    }
    free(x);
    free(y);
    return err / ref;
}

int test_run_child(void (*fn)(void *), void *arg, char *buf, size_t size) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn(arg);
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + got, size - 1 - got)) > 0 && got + 1 < size) got += (size_t)r;
    buf[got] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* Probed in a child: CUDA initialized in this process would be unusable in forked tests. */
static void probe_cuda(void *arg) {
    (void)arg;
    _exit(tensor_backend_cuda() ? 0 : 77);
}

int main(int argc, char **argv) {
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cuda")) cuda = true;
        else filter = argv[i];
    }
    quick = getenv("ANIMA_TEST_QUICK") && atoi(getenv("ANIMA_TEST_QUICK"));
    /* ANIMA_PARITY_SELFTEST=1 runs the parity tests with the CPU standing in for the GPU */
    if (cuda && !getenv("ANIMA_PARITY_SELFTEST")) {
        char buf[256];
        int st = test_run_child(probe_cuda, NULL, buf, sizeof buf);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("skipped: no CUDA device\n");
            return 0;
        }
    }
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < ntests; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        bool is_cuda = !strncmp(tests[i].name, "cuda_", 5);
        if (is_cuda != cuda) continue;
        double t0 = base_now();
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(1, 2); /* messages in order under their test */
            tests[i].fn();
            tensor_runtime_shutdown();
#ifdef TEST_LSAN
            if (!no_leak_check && __lsan_do_recoverable_leak_check()) test_fail_at(tests[i].file, 0, "LeakSanitizer: leaks (above)");
#endif
            fflush(NULL);
            _exit(failures_in_child ? 1 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        double ms = (base_now() - t0) * 1e3;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
            skipped++;
            printf("skip %-40s (%s)\n", tests[i].name, tests[i].file);
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passed++;
            printf("ok   %-40s %8.1f ms\n", tests[i].name, ms);
        } else {
            failed++;
            printf("FAIL %-40s (%s, %s %d)\n", tests[i].name, tests[i].file,
                   WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        }
        fflush(stdout);
    }
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
