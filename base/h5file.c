/* base/h5file.c — the HDF5 file helpers shared by optim/checkpoint.c and datasets/corpus/cache.c
 * (h5file.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/h5file.h"

#include "base/errbuf.h"

/* the message into the caller's err, which may be NULL (datasets/corpus/cache.c's cleanup passes none) */
#define SET_ERR(...) ((err && errlen) ? (void)snprintf(err, errlen, __VA_ARGS__) : (void)0)

void base_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* libhdf5 closes the ids left open at exit (H5_term_library, an atexit handler). A file whose
 * close failed (see base_h5_save_end) is half torn down, and closing it there crashed the
 * process after it had reported the failure (SEGV in H5F__close_cb, exit status 139). So once
 * that happened, the process ends at exit with its status before libhdf5's handler runs (this
 * one is registered after it): stdio flushed, the other handlers of a process that already
 * failed skipped. Processes without a failed close keep libhdf5's teardown. */
static void end_before_hdf5_teardown(int status, void *arg) {
    (void)arg;
    fflush(NULL);
    _exit(status);
}

static void keep_hdf5_from_closing_at_exit(void) {
    static atomic_flag registered = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&registered)) on_exit(end_before_hdf5_teardown, NULL);
}

/* The OS error of the first failed call of the save in progress (0: none yet), for the one
 * message base_h5_save_end prints: "No space left on device", not whatever a later cleanup
 * call left in errno. Reset by base_h5_save_begin. */
static _Thread_local int save_errno;

/* A save that failed is not finished on its disk. A failed H5Dclose or H5Fclose (the flush
 * they do hit a full disk) leaves the object half torn down with its id still valid, and
 * libhdf5 1.10 crashes closing it again, at exit if not before (SEGV in H5F__close_cb from
 * H5_term_library). So at the first failure, HDF5's descriptor of loc's file is pointed at an
 * in-memory file, where every later write and the flushes closing does cannot fail; the save
 * then ends as failed and its temporary is removed by name. */
static void divert(hid_t loc) {
    hid_t f = loc >= 0 ? H5Iget_file_id(loc) : -1;
    if (f < 0) return;
    int *fd = NULL, mem = memfd_create("anima-h5-discard", MFD_CLOEXEC);
    if (mem >= 0 && H5Fget_vfd_handle(f, H5P_DEFAULT, (void **)&fd) >= 0 && fd && *fd >= 0) dup2(mem, *fd);
    if (mem >= 0) close(mem);
    H5Fclose(f); /* the extra id only; the file stays open */
}

const char *base_h5_save_error(void) { return save_errno ? strerror(save_errno) : "unknown error"; }

/* records the failure of a call on loc (errno), diverts its file; -1 */
static int failed(hid_t loc) {
    if (!save_errno) save_errno = errno ? errno : EIO;
    divert(loc);
    return -1;
}

/* ---- saving ------------------------------------------------------------------------------ */

static int fsync_path(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

/* dirname of path into buf ("." when it has no slash) */
static void dir_of(const char *path, char *buf, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == path) snprintf(buf, n, "/");
    else snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

/* A rename is durable only once its directory is synced (power loss, not kills: a killed
 * process's rename is already visible to everyone). Best effort. */
static void fsync_dir(const char *path) {
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

/* A save killed mid-write (SIGKILL, a crash) leaves "<path>.tmp-<pid>" behind, up to a gigabyte
 * for a big dataset cache. Remove those whose writer is gone (kill(pid, 0) fails with ESRCH), so
 * repeated kills do not pile up large files; a temporary of a live process (another writer) is
 * left alone. */
static void remove_stale_temps(const char *path) {
    char dir[4096], prefix[4096];
    dir_of(path, dir, sizeof dir);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    size_t np = strlen(prefix);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, np)) continue;
        char *end;
        long pid = strtol(e->d_name + np, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        unlink(full);
    }
    closedir(d);
}

hid_t base_h5_save_begin(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen) {
    base_h5_quiet();
    remove_stale_temps(path);
    snprintf(tmp, tmplen, "%s.tmp-%ld", path, (long)getpid());
    /* The HDF5 1.10 file format: its superblock, object headers (where attributes and the
     * chunk index of a one-chunk dataset live) and indexes carry checksums, so a damaged file
     * is refused at open or read instead of being parsed. HDF5 1.10's parser is not safe on
     * damaged files of the default (1.0) format: under ASan, random byte flips gave a
     * use-after-free reading attributes, and with the 1.8 format (v1 B-tree chunk index,
     * no checksum) a heap overflow in H5Dread. Readers need HDF5 ≥ 1.10 (h5py 3 has it). */
    save_errno = 0;
    errno = 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t f = fapl < 0 || H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0
                  ? -1
                  : H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    int e = errno ? errno : EIO;
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        /* H5Fcreate may have created the file before failing to write its superblock */
        unlink(tmp);
        SET_ERR("%s: cannot create the temporary file %s (%s)", path, tmp, strerror(e));
    }
    return f;
}

int base_h5_save_end(hid_t f, const char *tmp, const char *path, bool ok, const char *what, char *err,
                     size_t errlen) {
    /* the flush writes the metadata and the chunks still cached (H5Dclose flushes a dataset's
     * chunks: a failure there already set ok = false through base_h5_write_checked) */
    base_h5_quiet();
    if (!ok) divert(f); /* a failure the caller saw (an H5Gcreate2 of its own) */
    else if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) ok = false, failed(f);
    /* A close that fails after all (the flush above failed in the metadata cache, which libhdf5
     * 1.10 then leaves inconsistent: "slist not empty") leaves f half torn down; closing it again
     * crashes, so it is left as is, and libhdf5 does not close it at exit. */
    if (H5Fclose(f) < 0) {
        ok = false, failed(-1);
        if (H5Iis_valid(f) > 0) keep_hdf5_from_closing_at_exit();
    }
    if (ok && fsync_path(tmp) != 0) ok = false, failed(-1);
    if (!ok) {
        int e = save_errno ? save_errno : errno ? errno : EIO;
        unlink(tmp);
        SET_ERR("%s: writing the %s failed (%s); the previous file, if any, is unchanged", path, what, strerror(e));
        return -1;
    }
    if (rename(tmp, path) != 0) {
        SET_ERR("%s: cannot rename %s into place (%s)", path, tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    fsync_dir(path);
    return 0;
}

/* ---- datasets ---------------------------------------------------------------------------- */

int base_h5_write_checked(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, int rank, const hsize_t *dims,
                          const void *data, size_t chunk_bytes, bool deflate) {
    base_h5_quiet(); /* per thread in a thread-safe libhdf5: a writer thread prints its own otherwise */
    hsize_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= dims[i];
    hid_t space = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    if (rank > 0 && numel > 0) {
        hsize_t chunk[H5S_MAX_RANK];
        for (int i = 0; i < rank; i++) chunk[i] = dims[i];
        size_t row = (size_t)(numel / dims[0]) * H5Tget_size(file_type);
        if (row * dims[0] > chunk_bytes) chunk[0] = row >= chunk_bytes ? 1 : chunk_bytes / row;
        H5Pset_chunk(dcpl, rank, chunk);
        if (deflate) H5Pset_shuffle(dcpl), H5Pset_deflate(dcpl, 1);
        H5Pset_fletcher32(dcpl);
    }
    hid_t ds = space < 0 || dcpl < 0 || lcpl < 0 ? -1 : H5Dcreate2(loc, name, file_type, space, lcpl, dcpl, H5P_DEFAULT);
    int st = ds < 0                                                                                  ? failed(loc)
             : numel > 0 && H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? failed(loc)
                                                                                             : 0;
    /* the chunks still in the cache are written here, not by H5Dclose, whose failure on a full
     * disk would leave the dataset half closed (see divert) */
    if (ds >= 0 && !st && H5Dflush(ds) < 0) st = failed(loc);
    if (ds >= 0 && H5Dclose(ds) < 0) st = failed(loc);
    if (dcpl >= 0 && H5Pclose(dcpl) < 0) st = failed(loc);
    if (lcpl >= 0 && H5Pclose(lcpl) < 0) st = failed(loc);
    if (space >= 0 && H5Sclose(space) < 0) st = failed(loc);
    return st;
}

/* ---- reading ----------------------------------------------------------------------------- */

htri_t base_h5_path_exists(hid_t loc, const char *name) {
    char part[256];
    for (const char *p = name + (name[0] == '/');; p++) {
        if (*p != '/' && *p) continue;
        size_t n = (size_t)(p - name);
        if (n >= sizeof part) return -1;
        memcpy(part, name, n);
        part[n] = 0;
        htri_t e = H5Lexists(loc, part, H5P_DEFAULT);
        if (e > 0) e = H5Oexists_by_name(loc, part, H5P_DEFAULT);
        if (e <= 0 || !*p) return e;
    }
}

/* The version of the superblock, which sits at offset 0 or at 512 · 2^k (after a user block):
 * the byte after the 8-byte signature. -1 when no signature is found. */
static int superblock_version(const char *path) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    int v = -1;
    for (long off = 0; v < 0; off = off ? 2 * off : 512) {
        unsigned char b[9];
        if (fseek(fp, off, SEEK_SET) != 0 || fread(b, 1, 9, fp) != 9) break;
        if (!memcmp(b, sig, 8)) v = b[8];
    }
    fclose(fp);
    return v;
}

hid_t base_h5_open_read(const char *path, const char *what, char *err, size_t errlen) {
    base_h5_quiet();
    if (access(path, R_OK) != 0) {
        SET_ERR("%s: cannot read (%s)", path, strerror(errno));
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        /* no HDF5 signature: another kind of file, or one whose first bytes were lost — a
         * damaged file is named as possibly corrupt, never only as the wrong kind (issue 17) */
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size < 8)
            SET_ERR("%s: %s, not an HDF5 file (expected an anima %s: a truncated or corrupt one?)", path,
                    st.st_size ? "a few bytes" : "empty", what);
        else SET_ERR("%s: not an HDF5 file (expected an anima %s, or it is corrupt)", path, what);
        return -1;
    }
    /* Superblock 3 is the HDF5 1.10 format, the first whose metadata all carry checksums. The
     * older ones are refused before libhdf5 parses them: on damaged files of those formats it
     * reads out of bounds (found by byte flips under ASan, see base_h5_save_begin, and by
     * tests/fuzz/fuzz_skinning.c). */
    int sb = superblock_version(path);
    if (sb < 3) {
        SET_ERR("%s: HDF5 format older than 1.10 (superblock version %d), whose metadata has no "
                "checksums and is not read; write the %s again with this anima, or save it in the 1.10 "
                "format (h5py: h5py.File(path, 'w', libver=('v110', 'latest')); C: "
                "H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST))", path, sb, what);
        return -1;
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) SET_ERR("%s: HDF5 cannot open it (truncated or corrupt?)", path);
    return f;
}

/* ---- attributes -------------------------------------------------------------------------- */

int base_h5_attr_write_num(hid_t loc, const char *name, hid_t type, int64_t n, const void *v) {
    base_h5_quiet();
    hsize_t dim = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = sp < 0 ? -1 : H5Acreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    int st = a < 0 || H5Awrite(a, type, v) < 0 ? failed(loc) : 0;
    if (a >= 0 && H5Aclose(a) < 0) st = failed(loc);
    if (sp >= 0 && H5Sclose(sp) < 0) st = failed(loc);
    return st;
}

int base_h5_attr_i64(hid_t loc, const char *name, int64_t v) { return base_h5_attr_write_num(loc, name, H5T_NATIVE_INT64, 0, &v); }

int base_h5_attr_str(hid_t loc, const char *name, const char *s) {
    base_h5_quiet();
    if (!s) s = "";
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, strlen(s) + 1);
    H5Tset_cset(ty, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR), a = ty < 0 || sp < 0 ? -1 : H5Acreate2(loc, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    int st = a < 0 || H5Awrite(a, ty, s) < 0 ? failed(loc) : 0;
    if (a >= 0 && H5Aclose(a) < 0) st = failed(loc);
    if (sp >= 0 && H5Sclose(sp) < 0) st = failed(loc);
    if (ty >= 0 && H5Tclose(ty) < 0) st = failed(loc);
    return st;
}

char *base_h5_attr_read_str(hid_t loc, const char *name, size_t max) {
    if (H5Aexists(loc, name) <= 0) return NULL;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return NULL;
    hid_t ty = H5Aget_type(a);
    char *s = NULL;
    /* fixed-length strings only: a variable-length one lives in the file's global heap, which has
     * no checksum, and libhdf5 1.10 copies out of bounds from a damaged one (H5HG_read, found by
     * tests/fuzz/fuzz_skinning.c) */
    if (ty >= 0 && H5Tget_class(ty) == H5T_STRING && H5Tis_variable_str(ty) == 0) {
        size_t n = H5Tget_size(ty);
        if (n > 0 && n < max && (s = calloc(n + 1, 1)) && H5Aread(a, ty, s) < 0) {
            free(s);
            s = NULL;
        }
    }
    if (ty >= 0) H5Tclose(ty);
    H5Aclose(a);
    return s;
}

int base_h5_attr_read_num(hid_t loc, const char *name, hid_t type, int64_t n, void *v) {
    if (H5Aexists(loc, name) <= 0) return 1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t sp = H5Aget_space(a), ty = H5Aget_type(a);
    hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    H5T_class_t cl = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
    bool ok = np == (hssize_t)n && (cl == H5T_INTEGER || cl == H5T_FLOAT) && H5Aread(a, type, v) >= 0;
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    H5Aclose(a);
    return ok ? 0 : -1;
}

bool base_h5_attr_is_vlen_str(hid_t loc, const char *name) {
    if (H5Aexists(loc, name) <= 0) return false;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return false;
    hid_t ty = H5Aget_type(a);
    bool v = ty >= 0 && H5Tget_class(ty) == H5T_STRING && H5Tis_variable_str(ty) > 0;
    if (ty >= 0) H5Tclose(ty);
    H5Aclose(a);
    return v;
}

int base_h5_read_typed(hid_t f, const char *path, const char *name, int rank, int64_t *want, hid_t mem, size_t elem,
                       void **out, char *err, size_t errlen) {
    *out = NULL;
    if (base_h5_path_exists(f, name) <= 0) return base_errf(err, errlen, "%s: no dataset %s", path, name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return base_errf(err, errlen, "%s: no dataset %s", path, name);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[8] = {0};
    int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (r != rank || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        if (sp >= 0) H5Sclose(sp);
        H5Dclose(d);
        return base_errf(err, errlen, "%s: %s has rank %d, expected %d", path, name, r, rank);
    }
    H5Sclose(sp);
    size_t n = 1;
    for (int k = 0; k < rank; k++) {
        if (want[k] >= 0 && (int64_t)dims[k] != want[k]) {
            H5Dclose(d);
            return base_errf(err, errlen, "%s: %s has %llu along dimension %d, expected %lld", path, name,
                             (unsigned long long)dims[k], k, (long long)want[k]);
        }
        want[k] = (int64_t)dims[k];
        if (dims[k] > ((hsize_t)1 << 32)) {
            H5Dclose(d);
            return base_errf(err, errlen, "%s: %s is implausibly large", path, name);
        }
        n *= dims[k];
    }
    if (n > ((size_t)1 << 31)) {
        H5Dclose(d);
        return base_errf(err, errlen, "%s: %s is implausibly large", path, name);
    }
    void *buf = malloc(elem * (n + 1));
    if (!buf) {
        H5Dclose(d);
        return base_errf(err, errlen, "%s: out of memory reading %s", path, name);
    }
    herr_t e = n ? H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) : 0;
    H5Dclose(d);
    if (e < 0) {
        free(buf);
        return base_errf(err, errlen, "%s: reading %s failed (damaged or not numeric)", path, name);
    }
    *out = buf;
    return 0;
}

int base_h5_read_dims(hid_t f, const char *path, const char *name, int rank, int64_t *dims, hid_t mem, size_t elem,
                      bool optional, void **out, char *err, size_t errlen) {
    *out = NULL;
    if (optional && base_h5_path_exists(f, name) <= 0) return 1;
    for (int k = 0; k < rank; k++) dims[k] = -1;
    return base_h5_read_typed(f, path, name, rank, dims, mem, elem, out, err, errlen);
}

int base_h5_read_array(hid_t f, const char *path, const char *name, int rank, int64_t *want, bool is_int, void **out,
                       char *err, size_t errlen) {
    if (base_h5_read_typed(f, path, name, rank, want, is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT, 4, out, err,
                           errlen))
        return -1;
    if (!is_int) {
        size_t n = 1;
        for (int k = 0; k < rank; k++) n *= (size_t)want[k];
        for (size_t i = 0; i < n; i++)
            if (!isfinite(((float *)*out)[i])) {
                free(*out), *out = NULL;
                return base_errf(err, errlen, "%s: %s holds a non-finite value", path, name);
            }
    }
    return 0;
}
