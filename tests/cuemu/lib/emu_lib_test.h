/* tests/cuemu/emu_lib_test.h — a small harness for the emulated-library tests (test_emu_*.cpp):
 * checks that count and report, device buffers, and expect_report(), which runs a misuse in a
 * forked child and passes when the emulator stops it with a message naming what is expected
 * (cuemu_fail prints "cuemu: ..." and aborts unless a test armed it, so a child is the one way
 * to see the report without depending on how the runtime unwinds). Each program ends with
 * "N passed, M failed" (tests/run.sh's summary line). */
#ifndef ANIMA_TESTS_CUEMU_EMU_LIB_TEST_H
#define ANIMA_TESTS_CUEMU_EMU_LIB_TEST_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

static int g_pass, g_fail;

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                              \
        if (cond) g_pass++;                                                                                           \
        else {                                                                                                        \
            g_fail++;                                                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                           \
            fprintf(stderr, __VA_ARGS__);                                                                             \
            fprintf(stderr, "\n");                                                                                    \
        }                                                                                                             \
    } while (0)

static inline int finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, g_pass, g_fail);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

template <typename T> static T *dev_alloc(size_t n) {
    void *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T) + (n == 0)) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc failed\n");
        exit(2);
    }
    return (T *)p;
}

template <typename T> static T *dev_upload(const std::vector<T> &h) {
    T *d = dev_alloc<T>(h.size());
    if (!h.empty()) cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}

template <typename T> static std::vector<T> dev_download(const T *d, size_t n) {
    std::vector<T> h(n);
    if (n) cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
}

/* Runs f in a child; passes when the child does not finish normally and its stderr contains
 * every string of `want` (the call and the argument the emulator must name). */
static void expect_report(const char *label, std::function<void()> f, std::vector<std::string> want) {
    fflush(stdout);
    fflush(stderr);
    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        exit(2);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        f();
        fflush(stderr);
        _exit(0); /* the misuse went unreported */
    }
    close(fd[1]);
    std::string err;
    char buf[4096];
    ssize_t r;
    while ((r = read(fd[0], buf, sizeof buf)) > 0) err.append(buf, (size_t)r);
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    bool stopped = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    bool named = true;
    for (const std::string &w : want) named = named && err.find(w) != std::string::npos;
    CHECK(stopped && named, "%s: %s; stderr: %s", label, stopped ? "message lacks the expected names" : "not reported",
          err.c_str());
}

#endif
