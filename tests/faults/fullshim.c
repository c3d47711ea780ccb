/* tests/faults/fullshim.c — a full disk for one process, by LD_PRELOAD (tests/test_faults.c).
 * Files whose path contains $ANIMA_FAULT_MATCH get $ANIMA_FAULT_BYTES bytes in all (shared by
 * every such file of the process; only bytes past what was written count); past that, write/pwrite/writev fail with ENOSPC (the write
 * that crosses the limit is short), and so do fsync/fdatasync once the limit is reached.
 * glibc's stdio writes through its internal write, which no LD_PRELOAD can see, so the stdio
 * output functions are interposed too for streams opened on such files: past the limit they
 * fail and set the stream's error flag, as a failed flush does. Descriptors are tracked from
 * open/openat/creat/fopen and dup2/dup3 to close/fclose. Not part of libanima: built by the Makefile into
 * $(BUILD)/fullshim.so. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXFD 4096
static unsigned char tracked[MAXFD];
static long long hwm[MAXFD]; /* the end of what a tracked descriptor has written */
static long long limit = -1, written;
static const char *match;
static int inited;

static void init(void) {
    if (inited) return;
    inited = 1;
    match = getenv("ANIMA_FAULT_MATCH");
    const char *b = getenv("ANIMA_FAULT_BYTES");
    if (match && *match && b) limit = atoll(b);
    else match = NULL;
}

static void *real(const char *name) { return dlsym(RTLD_NEXT, name); }

static void track(int fd, const char *path) {
    init();
    if (fd < 0 || fd >= MAXFD) return;
    tracked[fd] = match && path && strstr(path, match) != NULL;
    struct stat st;
    hwm[fd] = tracked[fd] && fstat(fd, &st) == 0 ? (long long)st.st_size : 0;
}
static int is_tracked(int fd) { return fd >= 0 && fd < MAXFD && tracked[fd]; }

/* how many of the n bytes written at off (-1: the current offset) the disk takes; -1 with ENOSPC
 * when none. Only bytes past what the descriptor has written so far (its high-water mark, from
 * the file's size at open: an ftruncate that grows a file makes a hole, not data) take space:
 * an overwrite in place, as HDF5's last superblock update, does not. *grow is what the write
 * adds to the total. */
static long long allow(int fd, size_t n, off_t off, long long *grow) {
    *grow = 0;
    if (!is_tracked(fd) || n == 0) return (long long)n;
    if (off < 0) off = lseek(fd, 0, SEEK_CUR);
    long long hw = hwm[fd], end = (long long)off + (long long)n;
    if (off < 0 || end <= hw) return (long long)n;
    long long start = off > hw ? off : hw, need = end - start, left = limit - written;
    if (need <= left) return *grow = need, (long long)n;
    if (left <= 0 || start - off + left <= 0) return errno = ENOSPC, -1;
    *grow = left;
    return start - off + left;
}

/* ---- descriptors ---- */
int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    int fd = ((int (*)(const char *, int, mode_t))real("open"))(path, flags, m);
    track(fd, path);
    return fd;
}
int open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    int fd = ((int (*)(const char *, int, mode_t))real("open64"))(path, flags, m);
    track(fd, path);
    return fd;
}
int openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t m = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
    va_end(ap);
    int fd = ((int (*)(int, const char *, int, mode_t))real("openat"))(dir, path, flags, m);
    track(fd, path);
    return fd;
}
int creat(const char *path, mode_t m) { return open(path, O_CREAT | O_WRONLY | O_TRUNC, m); }
int close(int fd) {
    if (fd >= 0 && fd < MAXFD) tracked[fd] = 0;
    return ((int (*)(int))real("close"))(fd);
}

int dup2(int old, int fd) {
    int r = ((int (*)(int, int))real("dup2"))(old, fd);
    if (r >= 0 && r < MAXFD) tracked[r] = is_tracked(old), hwm[r] = is_tracked(old) ? hwm[old] : 0;
    return r;
}
int dup3(int old, int fd, int flags) {
    int r = ((int (*)(int, int, int))real("dup3"))(old, fd, flags);
    if (r >= 0 && r < MAXFD) tracked[r] = is_tracked(old), hwm[r] = is_tracked(old) ? hwm[old] : 0;
    return r;
}

ssize_t write(int fd, const void *buf, size_t n) {
    long long g, a = allow(fd, n, -1, &g);
    if (a < 0) return -1;
    ssize_t r = ((ssize_t(*)(int, const void *, size_t))real("write"))(fd, buf, (size_t)a);
    if (r > 0 && is_tracked(fd)) {
        written += g;
        off_t cur = lseek(fd, 0, SEEK_CUR);
        if (cur > hwm[fd]) hwm[fd] = cur;
    }
    return r;
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    long long g, a = allow(fd, n, off, &g);
    if (a < 0) return -1;
    ssize_t r = ((ssize_t(*)(int, const void *, size_t, off_t))real("pwrite"))(fd, buf, (size_t)a, off);
    if (r > 0 && is_tracked(fd)) {
        written += g;
        if ((long long)off + r > hwm[fd]) hwm[fd] = (long long)off + r;
    }
    return r;
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    if (!is_tracked(fd)) return ((ssize_t(*)(int, const struct iovec *, int))real("writev"))(fd, iov, cnt);
    ssize_t total = 0;
    for (int i = 0; i < cnt; i++) {
        ssize_t r = write(fd, iov[i].iov_base, iov[i].iov_len);
        if (r < 0) return total ? total : -1;
        total += r;
        if ((size_t)r < iov[i].iov_len) break;
    }
    return total;
}
int fsync(int fd) {
    init();
    if (is_tracked(fd) && written >= limit) return errno = ENOSPC, -1;
    return ((int (*)(int))real("fsync"))(fd);
}
int fdatasync(int fd) {
    init();
    if (is_tracked(fd) && written >= limit) return errno = ENOSPC, -1;
    return ((int (*)(int))real("fdatasync"))(fd);
}

/* ---- stdio ---- */
#define ERR_SEEN 0x0020 /* glibc's _IO_ERR_SEEN: what ferror reads */
static FILE *track_file(FILE *f, const char *path) {
    if (f) track(fileno(f), path);
    return f;
}
FILE *fopen(const char *path, const char *mode) {
    return track_file(((FILE * (*)(const char *, const char *)) real("fopen"))(path, mode), path);
}
FILE *fopen64(const char *path, const char *mode) {
    return track_file(((FILE * (*)(const char *, const char *)) real("fopen64"))(path, mode), path);
}
int fclose(FILE *f) {
    int fd = fileno(f);
    if (fd >= 0 && fd < MAXFD) tracked[fd] = 0;
    return ((int (*)(FILE *))real("fclose"))(f);
}

/* the stdio write of n bytes: how many the disk takes (the rest fails, setting the error flag) */
static size_t stdio_put(FILE *f, const void *p, size_t n) {
    int fd = fileno(f);
    size_t (*rfwrite)(const void *, size_t, size_t, FILE *) = real("fwrite");
    if (!is_tracked(fd)) return rfwrite(p, 1, n, f);
    long long left = limit - written, a = left <= 0 ? 0 : left < (long long)n ? left : (long long)n;
    size_t r = a ? rfwrite(p, 1, (size_t)a, f) : 0;
    written += (long long)r;
    if (r < n) f->_flags |= ERR_SEEN, errno = ENOSPC;
    return r;
}
size_t fwrite(const void *p, size_t size, size_t n, FILE *f) {
    if (size == 0 || n == 0) return 0;
    return stdio_put(f, p, size * n) / size;
}
int fputs(const char *s, FILE *f) { return stdio_put(f, s, strlen(s)) == strlen(s) ? 1 : EOF; }
int fputc(int c, FILE *f) {
    unsigned char b = (unsigned char)c;
    return stdio_put(f, &b, 1) == 1 ? b : EOF;
}
int putc(int c, FILE *f) { return fputc(c, f); }
int vfprintf(FILE *f, const char *fmt, va_list ap) {
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    if (n < 0) return -1;
    size_t r = stdio_put(f, s, (size_t)n);
    free(s);
    return r == (size_t)n ? n : -1;
}
int fprintf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap) {
    (void)flag;
    return vfprintf(f, fmt, ap);
}
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...) {
    (void)flag;
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(f, fmt, ap);
    va_end(ap);
    return n;
}
