/* tests/test.h — a small test framework. TEST(name) { ... } registers a test; each runs in
 * its own forked child (a crash or abort fails that test only). The runner prints one line
 * per test and ends with "N passed, N failed". */
#ifndef ANIMA_TEST_H
#define ANIMA_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "autograd/autograd.h"

typedef void (*TestFn)(void);
void test_register(const char *name, const char *file, TestFn fn);
void test_fail_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool test_quick(void); /* ANIMA_TEST_QUICK=1: shorter loops (valgrind) */
bool test_cuda(void);  /* --cuda: the parity suite */
/* SANITIZE=1 checks each test for leaks (LeakSanitizer) when it ends. A test whose leaks are a
 * third-party library's, which LeakSanitizer's short stacks cannot tell apart from ours, turns
 * that check off for itself, saying why; valgrind still checks it with tests/valgrind.supp. */
void test_no_leak_check(const char *why);
/* Runs the shell command cmd (add 2>&1 for stderr) with its stdout into out (NUL-terminated,
 * at most n − 1 bytes); returns its exit status, 128 + signal when killed, -1 when it could not
 * start. */
int test_run_capture(const char *cmd, char *out, size_t n);
/* The anima program the command-line tests run: $ANIMA when set, else ./anima. */
const char *test_anima_bin(void);

#define TEST(name)                                                              \
    static void test_##name(void);                                              \
    __attribute__((constructor)) static void test_reg_##name(void) {            \
        test_register(#name, __FILE__, test_##name);                            \
    }                                                                           \
    static void test_##name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) test_fail_at(__FILE__, __LINE__, "CHECK(%s)", #cond);      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                    \
    do {                                                                        \
        if (!(cond)) test_fail_at(__FILE__, __LINE__, __VA_ARGS__);             \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                       \
    do {                                                                                            \
        double a_ = (a), b_ = (b);                                                                  \
        if (!(fabs(a_ - b_) <= (tol)))                                                              \
            test_fail_at(__FILE__, __LINE__, "%s = %.10g vs %s = %.10g (tol %g)", #a, a_, #b, b_, (double)(tol)); \
    } while (0)

/* max |a - b| / max(max |b|, 1e-30): the error relative to the reference's scale */
double test_rel_err(const Tensor *a, const Tensor *b);
/* Runs fn in a child with stderr captured; returns its exit status and copies stderr to buf. */
int test_run_child(void (*fn)(void *), void *arg, char *buf, size_t size);

#endif
