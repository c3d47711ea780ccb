/* tests/test_base.c — base/: the clocks, the duration format, the progress display's plain
 * lines, the error buffer's truncation, the checked allocator's message, HSV colors, 3×3 inverses, the
 * SIGINT/SIGTERM catch and the finiteness of arrays. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/color.h"
#include "base/errbuf.h"
#include "base/finite.h"
#include "base/interrupt.h"
#include "base/mat3.h"
#include "base/progress.h"
#include "base/rng.h"
#include "tests/test.h"

TEST(base_clock_monotonic) {
    double t0 = base_now(), c0 = base_cpu_now();
    double prev = t0;
    volatile double sink = 0;
    for (int i = 0; i < 2000000; i++) {
        sink += (double)i * 1e-9;
        if (i % 1000 == 0) {
            double t = base_now();
            CHECK(t >= prev);
            prev = t;
        }
    }
    CHECK(base_now() > t0);
    /* the loop above burns CPU: the process clock moved, by no more than the threads allow */
    CHECK(base_cpu_now() > c0);
    usleep(20000);
    CHECK(base_now() - t0 >= 0.02);
    /* the nanosecond form reads the same clock */
    int64_t n0 = base_now_ns();
    double s0 = base_now();
    int64_t n1 = base_now_ns();
    CHECK(n1 >= n0);
    CHECK(fabs(s0 - 1e-9 * (double)n0) < 0.01);
}

TEST(base_format_duration) {
    struct {
        double s;
        const char *want;
    } cases[] = {{0, "0:00"},         {59.9, "0:59"},      {61, "1:01"},      {3599, "59:59"}, {3600, "1:00:00"},
                 {3725, "1:02:05"},   {90061, "25:01:01"}, {-1, "?"},         {NAN, "?"},      {INFINITY, "?"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        base_format_duration(buf, sizeof buf, cases[i].s);
        CHECK_MSG(!strcmp(buf, cases[i].want), "%g s: \"%s\", want \"%s\"", cases[i].s, buf, cases[i].want);
    }
    char small[4];
    base_format_duration(small, sizeof small, 3725);
    CHECK(!strcmp(small, "1:0")); /* truncated, still terminated */
}

/* Plain lines (not a terminal): the cadence and the text of each line. */
TEST(base_progress_lines) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (!f) return;
    BaseProgress p = {.out = f, .name = "fit", .unit = "steps", .line_prefix = "step ", .rate_digits = 1,
                      .show_loss = true, .every = 4};
    base_progress_begin(&p, 0);
    for (int64_t s = 1; s <= 10; s++) base_progress_update(&p, s, 10, 0.5, 1e-3, false);
    base_progress_finish(&p, 10, 10, 0.5, 1e-3); /* nothing more: no bar on the line */
    fclose(f);
    /* steps 4, 8 (the cadence) and 10 (the last) */
    int lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    CHECK_MSG(lines == 3, "%d lines:\n%s", lines, text);
    CHECK_MSG(!strncmp(text, "fit: step 4/10  loss 0.5  lr 0.001  ", 36), "%s", text);
    CHECK(strstr(text, "fit: step 8/10  loss 0.5") != NULL);
    CHECK(strstr(text, "fit: step 10/10  loss 0.5") != NULL);
    CHECK(strstr(text, " steps/s  ETA ") != NULL);
    CHECK(strstr(text, "\033") == NULL && strchr(text, '\r') == NULL);
    free(text);

    /* every 0: a line at each tenth of the total (the corpus builder), a count suffix, no loss */
    f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (!f) return;
    p = (BaseProgress){.out = f, .name = "ds", .unit = "shapes", .count_suffix = " shapes", .rate_digits = 2};
    base_progress_begin(&p, 0);
    for (int64_t s = 1; s <= 20; s++) base_progress_update(&p, s, 20, 0, 0, false);
    base_progress_break(&p);
    fclose(f);
    lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    /* the first update (10 s since "never") and the tenths 2, 4, ..., 20 */
    CHECK_MSG(lines == 11, "%d lines:\n%s", lines, text);
    CHECK_MSG(!strncmp(text, "ds: 1/20 shapes  ", 17), "%s", text);
    CHECK(strstr(text, "ds: 20/20 shapes  ") != NULL && strstr(text, " shapes/s  ETA ") != NULL);
    CHECK(strstr(text, "loss") == NULL);
    free(text);
}

/* On a terminal: a bar redrawn in place; break ends its line once. */
TEST(base_progress_bar) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (!f) return;
    BaseProgress p = {.out = f, .name = "fit", .unit = "steps", .rate_digits = 1, .tty = true, .show_loss = true};
    base_progress_begin(&p, 0);
    base_progress_update(&p, 5, 10, 0.25, 0, true);
    base_progress_finish(&p, 10, 10, 0.125, 0);
    base_progress_break(&p);
    fclose(f);
    CHECK_MSG(strstr(text, "\r\033[Kfit [============>           ] 5/10  ") != NULL, "%s", text);
    CHECK_MSG(strstr(text, "\r\033[Kfit [========================] 10/10  ") != NULL, "%s", text);
    CHECK(strstr(text, "  loss 0.125\n") != NULL);
    size_t n = strlen(text);
    CHECK(n > 0 && text[n - 1] == '\n' && (n < 2 || text[n - 2] != '\n'));
    free(text);
}

TEST(base_errf_truncates) {
    char err[8];
    memset(err, 'x', sizeof err);
    CHECK(base_errf(err, sizeof err, "%s: %d", "abcdef", 42) == -1);
    CHECK(!strcmp(err, "abcdef:"));
    CHECK(base_errf(NULL, 0, "ignored %d", 1) == -1);
    char one[1] = {'x'};
    CHECK(base_errf(one, 1, "anything") == -1 && one[0] == 0);
    char keep[4] = "abc";
    CHECK(base_errf(keep, 0, "zzz") == -1 && !strcmp(keep, "abc")); /* n 0: untouched */
}

TEST(base_alloc_checked) {
    char *s = base_strdup("anima");
    CHECK(!strcmp(s, "anima"));
    s = base_realloc(s, 64);
    CHECK(!strcmp(s, "anima"));
    free(s);
    int *z = base_calloc(16, sizeof *z);
    for (int i = 0; i < 16; i++) CHECK(z[i] == 0);
    free(z);
    free(base_malloc(0)); /* 0 bytes: a pointer all the same, NULL only on failure */
}

static void oom(void *arg) {
    (void)arg;
    free(base_malloc(SIZE_MAX / 2));
}

TEST(base_alloc_oom_message) {
#ifdef __SANITIZE_ADDRESS__
    printf("    skipped: AddressSanitizer reports an impossible size itself instead of returning NULL\n");
    exit(77);
#endif
    char buf[1024];
    int st = test_run_child(oom, NULL, buf, sizeof buf);
    CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %d: %s", st, buf);
    CHECK_MSG(strstr(buf, "anima: out of memory allocating ") != NULL, "%s", buf);
    CHECK_MSG(strstr(buf, " bytes at tests/test_base.c:") != NULL, "%s", buf);
}

/* base/rng.h: splitmix64's published first outputs from state 0 (Vigna's reference
 * splitmix64.c), the stream advancing by γ, uniforms in [0, 1), and sub-streams that differ. */
TEST(base_rng_splitmix64_known_answers) {
    uint64_t s = 0;
    const uint64_t want[4] = {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full, 0xf88bb8a8724c81ecull};
    for (int i = 0; i < 4; i++) CHECK_MSG(base_rng_next(&s) == want[i], "draw %d", i);
    CHECK(s == 4 * BASE_RNG_GAMMA);
    CHECK(base_splitmix64(0) == want[0] && base_splitmix64(BASE_RNG_GAMMA) == want[1]);
    uint64_t u = 7;
    double lo = 1, hi = 0, sum = 0;
    for (int i = 0; i < 10000; i++) {
        double x = base_rng_uniform(&u);
        CHECK(x >= 0 && x < 1);
        lo = x < lo ? x : lo, hi = x > hi ? x : hi, sum += x;
    }
    CHECK_MSG(lo < 1e-3 && hi > 1 - 1e-3 && fabs(sum / 10000 - 0.5) < 0.01, "lo %g hi %g mean %g", lo, hi, sum / 10000);
    CHECK(base_rng_split(1, 0) != base_rng_split(1, 1) && base_rng_split(1, 0) != base_rng_split(2, 0));
}

/* the six hue sectors' corners, a hue past one turn, and the float form */
TEST(base_hsv_rgb) {
    const double want[6][3] = {{1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 1, 1}, {0, 0, 1}, {1, 0, 1}};
    double c[3];
    for (int i = 0; i < 6; i++) {
        base_hsv_rgb(i / 6.0, 1, 1, c);
        for (int k = 0; k < 3; k++) CHECK_NEAR(c[k], want[i][k], 1e-12);
    }
    base_hsv_rgb(2.25, 0.5, 0.8, c); /* a quarter turn: between yellow and green, s 0.5 */
    CHECK_NEAR(c[0], 0.8 * (1 - 0.5 * 0.5), 1e-12);
    CHECK_NEAR(c[1], 0.8, 1e-12);
    CHECK_NEAR(c[2], 0.4, 1e-12);
    base_hsv_rgb(0.3, 0, 0.6, c); /* no saturation: gray */
    CHECK(c[0] == 0.6 && c[1] == 0.6 && c[2] == 0.6);
    float f[3];
    base_hsv_rgbf(2.25, 0.5, 0.8, f);
    base_hsv_rgb(2.25, 0.5, 0.8, c);
    for (int k = 0; k < 3; k++) CHECK(f[k] == (float)c[k]);
}

/* the inverse times the matrix is the identity, the determinant comes back, a singular matrix
 * gives det 0; the cross product of the axes */
TEST(base_mat3_inverse) {
    const double A[9] = {2, 1, 0, 0, 3, 1, 1, 0, 4};
    double B[9], P[9];
    CHECK(base_mat3_inv(A, B) == base_mat3_det(A));
    CHECK_NEAR(base_mat3_det(A), 25, 1e-12);
    base_mat3_mul(A, B, P);
    for (int k = 0; k < 9; k++) CHECK_NEAR(P[k], k % 4 == 0, 1e-14);
    const double S[9] = {1, 2, 3, 2, 4, 6, 0, 1, 1};
    CHECK(base_mat3_inv(S, B) == 0);
    double x[3] = {1, 0, 0}, y[3] = {0, 1, 0}, z[3];
    base_vec3_cross(x, y, z);
    CHECK(z[0] == 0 && z[1] == 0 && z[2] == 1);
    base_vec3_cross(z, x, z); /* may alias: z × x = y */
    CHECK(z[0] == 0 && z[1] == 1 && z[2] == 0);
}

/* a quarter turn about z maps x to y; the matrix of any unit quaternion is orthonormal with
 * det 1; base_quat_to_mat3 divides by the length first (a scaled q gives the same rotation), the
 * unit form takes q as given */
TEST(base_quat_to_mat3) {
    const double h = sqrt(0.5), qz[4] = {h, 0, 0, h};
    double R[9], P[9], Rt[9];
    base_unit_quat_to_mat3(qz, R);
    const double Z[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1};
    for (int k = 0; k < 9; k++) CHECK_NEAR(R[k], Z[k], 1e-15);
    const double q[4] = {0.3, -0.5, 0.7, 0.2}, n = sqrt(0.09 + 0.25 + 0.49 + 0.04);
    const double u[4] = {q[0] / n, q[1] / n, q[2] / n, q[3] / n}, q3[4] = {3 * q[0], 3 * q[1], 3 * q[2], 3 * q[3]};
    double Ru[9], R3[9];
    base_quat_to_mat3(q, R);
    base_unit_quat_to_mat3(u, Ru);
    base_quat_to_mat3(q3, R3);
    for (int k = 0; k < 9; k++) {
        CHECK(R[k] == Ru[k]);
        CHECK_NEAR(R3[k], R[k], 1e-15);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Rt[3 * i + j] = R[3 * j + i];
    base_mat3_mul(R, Rt, P);
    for (int k = 0; k < 9; k++) CHECK_NEAR(P[k], k % 4 == 0, 1e-15);
    CHECK_NEAR(base_mat3_det(R), 1, 1e-15);
    base_unit_quat_to_mat3(q, Ru); /* not normalized: no longer a rotation */
    CHECK(fabs(base_mat3_det(Ru) - 1) > 0.01);
}

/* a caught SIGINT or SIGTERM lands in the flag; with SA_RESETHAND the next one would kill (the
 * default action is back); restore puts the actions from before the catch back */
TEST(base_interrupt_catch_restore) {
    struct sigaction ign = {0}, cur;
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    struct sigaction before[2];
    sigaction(SIGINT, &ign, &before[0]);
    sigaction(SIGTERM, &ign, &before[1]);
    BaseInterruptSaved saved;
    base_interrupt_signal = 0;
    base_interrupt_catch(0, &saved);
    raise(SIGTERM);
    CHECK(base_interrupt_signal == SIGTERM);
    raise(SIGINT);
    CHECK(base_interrupt_signal == SIGINT);
    base_interrupt_restore(&saved);
    sigaction(SIGINT, NULL, &cur);
    CHECK(cur.sa_handler == SIG_IGN);
    sigaction(SIGTERM, NULL, &cur);
    CHECK(cur.sa_handler == SIG_IGN);
    base_interrupt_signal = 0;
    base_interrupt_catch(SA_RESETHAND, &saved);
    raise(SIGINT);
    CHECK(base_interrupt_signal == SIGINT);
    sigaction(SIGINT, NULL, &cur);
    CHECK(cur.sa_handler == SIG_DFL);
    base_interrupt_restore(&saved);
    sigaction(SIGINT, NULL, &cur);
    CHECK(cur.sa_handler == SIG_IGN);
    sigaction(SIGINT, &before[0], NULL);
    sigaction(SIGTERM, &before[1], NULL);
}

/* one NaN or infinity anywhere makes an array not finite; an empty one is */
TEST(base_all_finite) {
    float f[4] = {0, -1e30f, 3, 1e-40f};
    double d[4] = {0, -1e300, 3, 5e-324};
    CHECK(base_all_finite_f(f, 4) && base_all_finite_d(d, 4));
    CHECK(base_all_finite_f(f, 0) && base_all_finite_d(NULL, 0));
    f[3] = NAN, d[0] = -INFINITY;
    CHECK(!base_all_finite_f(f, 4) && base_all_finite_f(f, 3));
    CHECK(!base_all_finite_d(d, 4) && base_all_finite_d(d + 1, 3));
    f[0] = INFINITY;
    CHECK(!base_all_finite_f(f, 1));
}
