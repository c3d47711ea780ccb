/* base/h5file.h — what the HDF5 files of the upper layers (optim/ checkpoints, datasets/
 * caches) share: the atomic save (a temporary "<path>.tmp-<pid>", flushed to disk and renamed
 * over <path>; temporaries of dead writers removed), the checked open for reading, and scalar
 * and string attributes. It sits here, the lowest layer both may use; each file's layout and
 * its checks stay with its owner. Input errors return -1 (or NULL) with a message naming the
 * file in err, as docs/architecture.md asks. */
#ifndef ANIMA_BASE_H5FILE_H
#define ANIMA_BASE_H5FILE_H

#include <hdf5.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HDF5 prints its own error stack by default; ours name the file and the object instead. */
void base_h5_quiet(void);

/* Starts a save of path: removes the temporaries of dead writers, names the temporary into tmp
 * and creates it in the HDF5 1.10 format (checksummed metadata). The file, or -1 with a
 * message in err. */
hid_t base_h5_save_begin(const char *path, char *tmp, size_t tmplen, char *err, size_t errlen);

/* Ends a save: flushes and closes f and, when ok and every HDF5 call of the save, the flush, the
 * close and the fsync succeeded, renames tmp over path; otherwise removes tmp (path is left as it
 * was) and says "<path>: writing the <what> failed (<the first OS error>)". The helpers below
 * record a failure of theirs and point the file at memory, so that closing it cannot fail half
 * done (libhdf5 1.10 crashes at exit after a failed H5Dclose/H5Fclose); a close that fails all the
 * same (a failed metadata flush) ends the process at exit before libhdf5's teardown. 0 or -1. */
int base_h5_save_end(hid_t f, const char *tmp, const char *path, bool ok, const char *what, char *err,
                     size_t errlen);

/* The OS error of the save in progress's first failed call ("No space left on device"), for a
 * caller's own message; "unknown error" when none was recorded. */
const char *base_h5_save_error(void);

/* Opens path read-only after checking that it is readable, HDF5, and in the 1.10 format or newer
 * (superblock version ≥ 3: checksummed metadata; older formats are refused with a message saying
 * how to re-save, because libhdf5 reads damaged ones out of bounds); what names the expected
 * kind in the message ("checkpoint": "expected an anima checkpoint"). The file, or -1. */
hid_t base_h5_open_read(const char *path, const char *what, char *err, size_t errlen);

/* A dataset name under loc (intermediate groups created) of `rank` dims (0: a scalar) holding
 * data (in mem_type), stored as file_type. Non-empty ones are chunked along dim 0 into pieces of
 * at most chunk_bytes (the whole dataset when it is smaller; at least one row) and carry a
 * Fletcher-32 checksum that HDF5 verifies on every read (h5py included), so a damaged byte fails
 * the read instead of loading garbage; with deflate, byte shuffle + deflate level 1 come first.
 * Scalars and empty datasets stay contiguous (a chunk cannot have a zero extent). 0 or -1. */
int base_h5_write_checked(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, int rank, const hsize_t *dims,
                          const void *data, size_t chunk_bytes, bool deflate);

/* Write a scalar attribute on loc (a file, group or dataset); 0 or -1. A NULL string is written as "". */
int base_h5_attr_i64(hid_t loc, const char *name, int64_t v);
int base_h5_attr_str(hid_t loc, const char *name, const char *s);
/* A numeric attribute of n values v of memory type `type`, stored as that type (n 0: a scalar of
 * one value); a failure is recorded for base_h5_save_end as the writers above do. 0 or -1. */
int base_h5_attr_write_num(hid_t loc, const char *name, hid_t type, int64_t n, const void *v);
/* A numeric (integer or float) attribute of exactly n values (1 for a scalar) converted into v of
 * memory type `type`: 0 read, 1 absent, -1 present but of another count or class, or unreadable. */
int base_h5_attr_read_num(hid_t loc, const char *name, hid_t type, int64_t n, void *v);

/* A fixed-length string attribute as a malloc'd C string; NULL when absent, not a string, a
 * variable-length string (kept in HDF5's unchecked global heap: not read), or max bytes or more
 * (a corrupt header could claim any size). h5py writes fixed-length ones from np.bytes_(...). */
char *base_h5_attr_read_str(hid_t loc, const char *name, size_t max);
/* Whether the attribute is a variable-length string (h5py's default for a str): for messages. */
bool base_h5_attr_is_vlen_str(hid_t loc, const char *name);

/* Whether an object is at path name under loc ("a/b" or "/a/b"), each link on the way checked in
 * turn (H5Lexists on "a/b" is an error, not "no", when the group a is absent) and the object it
 * ends at present (not a dangling link): 1 yes, 0 no, -1 a link that cannot be read (a damaged
 * file) or a name of 256 bytes or more. */
htri_t base_h5_path_exists(hid_t loc, const char *name);

/* Reads dataset name of f (the file at path, for messages) as float (is_int false: any stored
 * float type, every value checked finite) or int32 into a malloc'd *out. rank dims; want[k] ≥ 0
 * requires that extent, −1 takes any and is filled in. A missing dataset (or a group on its way),
 * another rank or extent, an implausible size or a failed read (a damaged chunk's checksum) is
 * -1 with err naming the file and the dataset. */
int base_h5_read_array(hid_t f, const char *path, const char *name, int rank, int64_t *want, bool is_int, void **out,
                       char *err, size_t errlen);
/* The same in any memory type mem of elem bytes (H5T_NATIVE_DOUBLE, H5T_NATIVE_UINT8, ...), no
 * finiteness check: the one reader of whole datasets the others are built on. */
int base_h5_read_typed(hid_t f, const char *path, const char *name, int rank, int64_t *want, hid_t mem, size_t elem,
                       void **out, char *err, size_t errlen);
/* base_h5_read_typed with every extent free: dims (rank) receives them. With optional, an absent
 * dataset (base_h5_path_exists not 1) is 1 with *out NULL and no message; otherwise as above. */
int base_h5_read_dims(hid_t f, const char *path, const char *name, int rank, int64_t *dims, hid_t mem, size_t elem,
                      bool optional, void **out, char *err, size_t errlen);

#endif
