/* tensor/core.c — scopes (arenas), tensor headers, constructors, metadata, grad mode (errors and
 * call sites: fail.c; the device registry: device.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "internal.h"

const char *tensor_shape_str(const Tensor *t, char *buf) {
    int n = 0;
    n += snprintf(buf + n, 128 - (size_t)n, "[");
    for (int i = 0; i < t->ndim && n < 120; i++)
        n += snprintf(buf + n, 128 - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    snprintf(buf + n, 128 - (size_t)n, "]");
    return buf;
}

const char *tensor_dtype_name(TensorDType dt) {
    switch (dt) {
    case TENSOR_F32: return "f32";
    case TENSOR_F64: return "f64";
    case TENSOR_I64: return "i64";
    case TENSOR_BF16: return "bf16";
    }
    return "?";
}

/* ---- scopes: chunked bump allocation, chunks cached across scopes ------------------------ */

/* AddressSanitizer cannot see inside a chunk: a recycled block is poisoned until it is taken
 * again, so a read of a gradient after autograd recycled it is reported */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHUNK_MIN ((size_t)1 << 20)
#define CHUNK_ALIGN 64
#define CACHE_CLASSES 48
#define CACHE_LIMIT ((size_t)4 << 30)

typedef struct Chunk {
    struct Chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    int cls;
} Chunk;
#define CHUNK_HDR ((sizeof(Chunk) + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN)

typedef struct DevBlock {
    struct DevBlock *next;
    void *ptr;
    TensorDevice dev;
} DevBlock;

/* a recycled block (tensor_storage_recycle), kept in its own first bytes */
typedef struct FreeBlock {
    struct FreeBlock *next;
    size_t size;
} FreeBlock;
#define RECYCLE_MIN ((size_t)4096)

struct TensorScope {
    TensorScope *parent;
    Chunk *chunks; /* head: the one being bumped */
    FreeBlock *free_blocks[CACHE_CLASSES]; /* by size: class c holds [2^c, 2^(c+1)) bytes */
    int64_t n_free;
    TensorStorage **log; /* tensor_scope_log_begin */
    int64_t log_n, log_cap;
    int log_depth;
    DevBlock *dev_blocks;
    size_t bytes;
    bool live;
};

static Chunk *chunk_cache[CACHE_CLASSES];
static size_t chunk_cache_bytes;
static TensorScope root_scope = {.live = true};
static _Thread_local TensorScope *scope_now;

static Chunk *chunk_get(size_t need) {
    int cls = 0;
    size_t size = CHUNK_MIN;
    while (size < need) size <<= 1, cls++;
    Chunk *c = chunk_cache[cls];
    if (c) {
        chunk_cache[cls] = c->next;
        chunk_cache_bytes -= c->size;
    } else {
        void *mem = NULL;
        if (posix_memalign(&mem, CHUNK_ALIGN, CHUNK_HDR + size) != 0 || !mem) {
            fprintf(stderr, "anima: out of memory allocating %zu bytes\n", size);
            abort();
        }
        c = mem;
        c->size = size;
        c->cls = cls;
    }
    c->used = 0;
    c->next = NULL;
    return c;
}

static void chunk_put(Chunk *c) {
    if (chunk_cache_bytes + c->size > CACHE_LIMIT) {
        free(c);
        return;
    }
    c->next = chunk_cache[c->cls];
    chunk_cache[c->cls] = c;
    chunk_cache_bytes += c->size;
}

TensorScope *tensor_scope_current(void) { return scope_now ? scope_now : &root_scope; }
TensorScope *tensor_scope_root(void) { return &root_scope; }

TensorScope *tensor_scope_switch(TensorScope *s) {
    TensorScope *prev = tensor_scope_current();
    if (!s->live) tensor_fail("tensor_scope_switch", "scope already ended");
    scope_now = s;
    return prev;
}

void *tensor_scope_alloc(TensorScope *s, size_t nbytes) {
    nbytes = (nbytes + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN;
    if (nbytes == 0) nbytes = CHUNK_ALIGN;
    Chunk *c = s->chunks;
    if (!c || c->used + nbytes > c->size) {
        Chunk *n = chunk_get(nbytes);
        if (c && nbytes > CHUNK_MIN / 4) { /* a big block: keep bumping the current chunk */
            n->next = c->next;
            c->next = n;
        } else {
            n->next = c;
            s->chunks = n;
        }
        c = n;
    }
    void *p = (char *)c + CHUNK_HDR + c->used;
    c->used += nbytes;
    s->bytes += nbytes;
    return p;
}

size_t tensor_scope_bytes(const TensorScope *s) { return s->bytes; }

TensorScope *tensor_scope_begin(void) {
    TensorScope *parent = tensor_scope_current();
    TensorScope *s = base_malloc(sizeof *s);
    *s = (TensorScope){.parent = parent, .live = true};
    scope_now = s;
    return s;
}

static void scope_release(TensorScope *s) {
    for (DevBlock *d = s->dev_blocks; d; d = d->next) tensor_backend_for(d->dev)->release(d->ptr);
    s->dev_blocks = NULL;
    for (int c = 0; c < CACHE_CLASSES; c++) {
        for (FreeBlock *b = s->free_blocks[c]; b; b = b->next) UNPOISON(b, b->size); /* the chunks are reused */
        s->free_blocks[c] = NULL;
    }
    s->n_free = 0;
    free(s->log);
    s->log = NULL, s->log_n = s->log_cap = 0, s->log_depth = 0;
    Chunk *c = s->chunks;
    while (c) {
        Chunk *next = c->next;
        chunk_put(c);
        c = next;
    }
    s->chunks = NULL;
    s->bytes = 0;
}

void tensor_scope_end(TensorScope *s) {
    if (s == &root_scope) tensor_fail("tensor_scope_end", "the root scope cannot be ended");
    if (s != tensor_scope_current())
        tensor_fail("tensor_scope_end", "not the innermost scope (end inner scopes first)");
    scope_now = s->parent == &root_scope ? NULL : s->parent;
    scope_release(s);
    s->live = false;
    free(s);
}

void tensor_runtime_shutdown(void) {
    while (scope_now && scope_now != &root_scope) tensor_scope_end(scope_now);
    scope_release(&root_scope);
    for (int i = 0; i < CACHE_CLASSES; i++) {
        while (chunk_cache[i]) {
            Chunk *n = chunk_cache[i]->next;
            free(chunk_cache[i]);
            chunk_cache[i] = n;
        }
    }
    chunk_cache_bytes = 0;
}

/* ---- headers and storage ------------------------------------------------------------------ */

size_t tensor_dtype_size(TensorDType dt) {
    switch (dt) {
    case TENSOR_F32: return 4;
    case TENSOR_F64:
    case TENSOR_I64: return 8;
    case TENSOR_BF16: return 2;
    }
    return 8;
}

int64_t tensor_contig_strides(int ndim, const int64_t *shape, int64_t *stride) {
    int64_t n = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = n;
        n *= shape[i];
    }
    return n;
}

static _Atomic uint64_t storage_serial;

uint64_t tensor_storage_serial_now(void) { return atomic_load_explicit(&storage_serial, memory_order_relaxed); }

static int size_class(size_t n) {
    int c = 0;
    while (c + 1 < CACHE_CLASSES && ((size_t)2 << c) <= n) c++;
    return c;
}

/* a recycled block of s holding *need bytes and at most twice that, the first found in *need's
 * size class or the next (*need becomes its size) */
static void *scope_take(TensorScope *s, size_t *need) {
    int c0 = size_class(*need);
    for (int c = c0; c <= c0 + 1 && c < CACHE_CLASSES; c++)
        for (FreeBlock **p = &s->free_blocks[c]; *p; p = &(*p)->next)
            if ((*p)->size >= *need && (*p)->size / 2 <= *need) {
                FreeBlock *b = *p;
                *p = b->next;
                s->n_free--;
                *need = b->size;
                UNPOISON(b, b->size);
                return b;
            }
    return NULL;
}

void tensor_storage_recycle(TensorStorage *st) {
    if (!st || !st->data || st->device != TENSOR_CPU || st->scope != tensor_scope_current() || st->capacity < RECYCLE_MIN)
        return;
    FreeBlock *b = st->data;
    int c = size_class(st->capacity);
    b->size = st->capacity;
    b->next = st->scope->free_blocks[c];
    st->scope->free_blocks[c] = b;
    st->scope->n_free++;
    POISON((char *)b + sizeof *b, b->size - sizeof *b);
    st->data = NULL;
}

int64_t tensor_scope_log_begin(TensorScope *s) {
    s->log_depth++;
    return s->log_n;
}

int64_t tensor_scope_log_end(TensorScope *s, TensorStorage *const **made) {
    if (s->log_depth <= 0) tensor_fail("tensor_scope_log_end", "no log open");
    s->log_depth--;
    *made = s->log;
    return s->log_n;
}

void tensor_scope_log_truncate(TensorScope *s, int64_t mark) {
    if (mark >= 0 && mark < s->log_n) s->log_n = mark;
}

static Tensor *header_new(TensorScope *s) {
    Tensor *t = tensor_scope_alloc(s, sizeof(Tensor));
    memset(t, 0, sizeof *t);
    t->scope = s;
    return t;
}

Tensor *tensor_empty_on(int ndim, const int64_t *shape, TensorDType dt, TensorDevice dev) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS)
        tensor_fail("tensor_empty", "%d dims (at most %d)", ndim, TENSOR_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) tensor_fail("tensor_empty", "negative size %lld at dim %d", (long long)shape[i], i);
    TensorScope *s = tensor_scope_current();
    Tensor *t = header_new(s);
    t->ndim = ndim;
    t->dtype = dt;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    int64_t n = tensor_contig_strides(ndim, shape, t->stride);
    TensorStorage *st = tensor_scope_alloc(s, sizeof *st);
    memset(st, 0, sizeof *st);
    st->nbytes = (size_t)n * tensor_dtype_size(dt);
    st->device = dev;
    st->serial = atomic_fetch_add_explicit(&storage_serial, 1, memory_order_relaxed) + 1;
    if (dev == TENSOR_CPU) {
        st->scope = s;
        st->capacity = (st->nbytes + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN;
        if (st->capacity == 0) st->capacity = CHUNK_ALIGN;
        st->data = st->capacity >= RECYCLE_MIN && s->n_free ? scope_take(s, &st->capacity) : NULL;
        if (!st->data) st->data = tensor_scope_alloc(s, st->capacity);
        if (s->log_depth > 0 && st->capacity >= RECYCLE_MIN) {
            if (s->log_n == s->log_cap) {
                s->log_cap = s->log_cap ? 2 * s->log_cap : 64;
                s->log = base_realloc(s->log, sizeof *s->log * (size_t)s->log_cap);
            }
            s->log[s->log_n++] = st;
        }
    } else {
        const TensorBackend *be = tensor_backend_for(dev);
        st->data = be->alloc(st->nbytes ? st->nbytes : 1);
        DevBlock *d = tensor_scope_alloc(s, sizeof *d);
        *d = (DevBlock){.next = s->dev_blocks, .ptr = st->data, .dev = dev};
        s->dev_blocks = d;
    }
    t->storage = st;
    return t;
}

Tensor *tensor_empty(int ndim, const int64_t *shape, TensorDType dt) {
    return tensor_empty_on(ndim, shape, dt, TENSOR_CPU);
}

Tensor *tensor_empty_like(const Tensor *t) {
    return tensor_empty_on(t->ndim, t->shape, t->dtype, tensor_device(t));
}

Tensor *tensor_make_view(const Tensor *x, int ndim, const int64_t *shape, const int64_t *stride,
                         int64_t offset) {
    Tensor *t = header_new(tensor_scope_current());
    t->storage = x->storage;
    t->dtype = x->dtype;
    t->ndim = ndim;
    t->offset = offset;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (ndim) memcpy(t->stride, stride, sizeof(int64_t) * (size_t)ndim);
    return t;
}

/* ---- constructors ------------------------------------------------------------------------- */

Tensor *tensor_full(int ndim, const int64_t *shape, double value, TensorDType dt) {
    Tensor *t = tensor_empty(ndim, shape, dt);
    tensor_backend_cpu.fill(t, value);
    return t;
}
Tensor *tensor_zeros(int ndim, const int64_t *shape, TensorDType dt) { return tensor_full(ndim, shape, 0, dt); }
Tensor *tensor_ones(int ndim, const int64_t *shape, TensorDType dt) { return tensor_full(ndim, shape, 1, dt); }

Tensor *tensor_zeros_like(const Tensor *t) {
    Tensor *o = tensor_empty_like(t);
    tensor_be("zeros_like", t)->fill(o, 0);
    return o;
}
Tensor *tensor_ones_like(const Tensor *t) {
    Tensor *o = tensor_empty_like(t);
    tensor_be("ones_like", t)->fill(o, 1);
    return o;
}
Tensor *tensor_scalar(double value, TensorDType dt) { return tensor_full(0, NULL, value, dt); }

Tensor *tensor_arange(double start, double end, double step, TensorDType dt) {
    if (step == 0 || !isfinite(start) || !isfinite(end))
        tensor_fail("tensor_arange", "bad range start=%g end=%g step=%g", start, end, step);
    double n = ceil((end - start) / step);
    int64_t len = n > 0 ? (int64_t)n : 0;
    Tensor *t = tensor_empty(1, &len, dt);
    tensor_check_bf16("tensor_arange", t);
    tensor_backend_cpu.arange(t, start, step);
    return t;
}

Tensor *tensor_linspace(double start, double end, int64_t n, TensorDType dt) {
    if (n < 0) tensor_fail("tensor_linspace", "negative count %lld", (long long)n);
    Tensor *t = tensor_empty(1, &n, dt);
    tensor_check_bf16("tensor_linspace", t);
    tensor_backend_cpu.arange(t, start, n > 1 ? (end - start) / (double)(n - 1) : 0);
    if (n > 1) tensor_set(t, (int64_t[]){n - 1}, end);
    return t;
}

Tensor *tensor_eye(int64_t n, TensorDType dt) {
    Tensor *t = tensor_zeros(TENSOR_SHAPE(n, n), dt);
    for (int64_t i = 0; i < n; i++) tensor_set(t, (int64_t[]){i, i}, 1);
    return t;
}

Tensor *tensor_from_data(int ndim, const int64_t *shape, TensorDType dt, const void *data) {
    Tensor *t = tensor_empty(ndim, shape, dt);
    if (t->storage->nbytes) memcpy(t->storage->data, data, t->storage->nbytes);
    return t;
}

Tensor *tensor_from_f64(int ndim, const int64_t *shape, TensorDType dt, const double *data) {
    Tensor *t = tensor_empty(ndim, shape, dt);
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case TENSOR_F32: ((float *)t->storage->data)[i] = (float)data[i]; break;
        case TENSOR_F64: ((double *)t->storage->data)[i] = data[i]; break;
        case TENSOR_I64: ((int64_t *)t->storage->data)[i] = (int64_t)data[i]; break;
        case TENSOR_BF16: ((uint16_t *)t->storage->data)[i] = tensor_bf16_from_f32((float)data[i]); break;
        }
    }
    return t;
}

Tensor *tensor_keep(const Tensor *t) {
    TensorScope *cur = tensor_scope_current();
    TensorScope *dst = cur->parent ? cur->parent : cur;
    TensorScope *prev = tensor_scope_switch(dst);
    Tensor *o = tensor_empty_like(t);
    tensor_be("tensor_keep", t)->copy(o, t);
    tensor_scope_switch(prev);
    return o;
}

/* ---- metadata ----------------------------------------------------------------------------- */

int64_t tensor_numel(const Tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

TensorDevice tensor_device(const Tensor *t) { return t->storage->device; }

bool tensor_is_contiguous(const Tensor *t) {
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

bool tensor_same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

int tensor_dim_wrap(const char *op, int dim, int ndim) {
    int n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n) tensor_fail(op, "dim %d out of range for %d dims", dim, ndim);
    return dim < 0 ? dim + n : dim;
}

void *tensor_data_ptr(const Tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)tensor_dtype_size(t->dtype);
}

static void *typed_ptr(const Tensor *t, TensorDType dt, const char *name) {
    if (t->dtype != dt) tensor_fail(name, "tensor is %s, not %s", tensor_dtype_name(t->dtype), tensor_dtype_name(dt));
    if (tensor_device(t) != TENSOR_CPU) tensor_fail(name, "tensor is not on the CPU");
    return tensor_data_ptr(t);
}
float *tensor_f32(const Tensor *t) { return typed_ptr(t, TENSOR_F32, "tensor_f32"); }
double *tensor_f64(const Tensor *t) { return typed_ptr(t, TENSOR_F64, "tensor_f64"); }
int64_t *tensor_i64(const Tensor *t) { return typed_ptr(t, TENSOR_I64, "tensor_i64"); }
uint16_t *tensor_bf16(const Tensor *t) { return typed_ptr(t, TENSOR_BF16, "tensor_bf16"); }

static int64_t elem_offset(const Tensor *t, const int64_t *index) {
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        if (index[i] < 0 || index[i] >= t->shape[i])
            tensor_fail("tensor_get", "index %lld out of range at dim %d", (long long)index[i], i);
        off += index[i] * t->stride[i];
    }
    return off;
}

static double host_load(const Tensor *t, int64_t off) {
    if (tensor_device(t) != TENSOR_CPU) {
        double v = 0;
        const TensorBackend *be = tensor_backend_for(tensor_device(t));
        size_t es = tensor_dtype_size(t->dtype);
        char buf[8];
        be->to_host(buf, (char *)t->storage->data + off * (int64_t)es, es);
        if (t->dtype == TENSOR_F32) v = *(float *)buf;
        else if (t->dtype == TENSOR_F64) v = *(double *)buf;
        else if (t->dtype == TENSOR_BF16) v = tensor_bf16_to_f32(*(uint16_t *)buf);
        else v = (double)*(int64_t *)buf;
        return v;
    }
    switch (t->dtype) {
    case TENSOR_F32: return ((float *)t->storage->data)[off];
    case TENSOR_F64: return ((double *)t->storage->data)[off];
    case TENSOR_I64: return (double)((int64_t *)t->storage->data)[off];
    case TENSOR_BF16: return tensor_bf16_to_f32(((uint16_t *)t->storage->data)[off]);
    }
    return 0;
}

double tensor_get(const Tensor *t, const int64_t *index) { return host_load(t, elem_offset(t, index)); }

void tensor_set(Tensor *t, const int64_t *index, double v) {
    if (tensor_device(t) != TENSOR_CPU) tensor_fail("tensor_set", "tensor is not on the CPU");
    int64_t off = elem_offset(t, index);
    switch (t->dtype) {
    case TENSOR_F32: ((float *)t->storage->data)[off] = (float)v; break;
    case TENSOR_F64: ((double *)t->storage->data)[off] = v; break;
    case TENSOR_I64: ((int64_t *)t->storage->data)[off] = (int64_t)v; break;
    case TENSOR_BF16: ((uint16_t *)t->storage->data)[off] = tensor_bf16_from_f32((float)v); break;
    }
}

double tensor_item(const Tensor *t) {
    if (tensor_numel(t) != 1) {
        char b[128];
        tensor_fail("tensor_item", "tensor of shape %s has more than one element", tensor_shape_str(t, b));
    }
    return host_load(t, t->offset);
}

void tensor_to_f64_array(const Tensor *t, double *dst) {
    int64_t n = tensor_numel(t), idx[TENSOR_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t off = t->offset;
        for (int i = 0; i < t->ndim; i++) off += idx[i] * t->stride[i];
        dst[k] = host_load(t, off);
        for (int i = t->ndim - 1; i >= 0; i--) {
            if (++idx[i] < t->shape[i]) break;
            idx[i] = 0;
        }
    }
}

void tensor_print(const Tensor *t, const char *name) {
    char b[128];
    int64_t n = tensor_numel(t);
    printf("%s: %s %s%s\n", name ? name : "tensor", tensor_dtype_name(t->dtype), tensor_shape_str(t, b),
           t->requires_grad ? " requires_grad" : "");
    double *v = base_malloc(sizeof(double) * (size_t)(n ? n : 1));
    tensor_to_f64_array(t, v);
    int64_t row = t->ndim ? t->shape[t->ndim - 1] : 1;
    for (int64_t i = 0; i < n && i < 64; i++)
        printf("%s% .6g%s", i % (row ? row : 1) == 0 ? "  " : " ", v[i], (i + 1) % (row ? row : 1) == 0 ? "\n" : "");
    if (n > 64) printf("  ... (%lld elements)\n", (long long)n);
    free(v);
}

/* ---- grad mode and nodes ------------------------------------------------------------------ */

static _Thread_local bool grad_disabled;
static _Thread_local uint64_t node_seq;

bool tensor_grad_enabled(void) { return !grad_disabled; }

bool tensor_grad_set_enabled(bool on) {
    bool prev = !grad_disabled;
    grad_disabled = !on;
    return prev;
}

Tensor *tensor_requires_grad(Tensor *t, bool on) {
    if (t->node) tensor_fail("tensor_requires_grad", "only leaves take the flag (this tensor has a producer)");
    if (on && t->dtype == TENSOR_I64) tensor_fail("tensor_requires_grad", "i64 tensors have no gradient");
    t->requires_grad = on;
    return t;
}

Tensor *tensor_detach(const Tensor *t) {
    return tensor_make_view(t, t->ndim, t->shape, t->stride, t->offset);
}

Tensor *tensor_view_at(const Tensor *base, int ndim, const int64_t *shape, int64_t offset) {
    int64_t stride[TENSOR_MAX_DIMS], n = tensor_contig_strides(ndim, shape, stride);
    int64_t cap = (int64_t)(base->storage->nbytes / tensor_dtype_size(base->dtype));
    if (offset < 0 || base->offset + offset + n > cap)
        tensor_fail("tensor_view_at", "[%lld, %lld) lies outside a storage of %lld elements",
                    (long long)(base->offset + offset), (long long)(base->offset + offset + n), (long long)cap);
    return tensor_make_view(base, ndim, shape, stride, base->offset + offset);
}

bool tensor_should_record(int n, Tensor *const *inputs) {
    if (grad_disabled) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

TensorNode *tensor_node_record(TensorOpId op, Tensor *out, int n, Tensor *const *inputs) {
    if (!tensor_should_record(n, inputs)) return NULL;
    TensorScope *s = tensor_scope_current();
    TensorNode *node = tensor_scope_alloc(s, sizeof *node);
    memset(node, 0, sizeof *node);
    node->op = op;
    node->seq = ++node_seq;
    node->n_inputs = n;
    node->inputs = tensor_scope_alloc(s, sizeof(Tensor *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) node->inputs[i] = inputs[i];
    node->out = out;
    out->node = node;
    out->requires_grad = true;
    return node;
}

/* ---- shared checks -------------------------------------------------------------------------- */

/* The names (as the op front-ends pass them to tensor_be) of what takes bf16 tensors: casts,
 * copies, fills and matmul, plus "backward" (a leaf's first gradient is a copy). The views
 * never reach a kernel; attention checks for itself (nn/attention.c). */
static bool bf16_supported(const char *op) {
    static const char *const ok[] = {"cast",        "contiguous",   "matmul",       "slice_scatter",
                                     "scalar",      "zeros",        "zeros_like",   "ones_like",
                                     "tensor_keep", "tensor_copy_", "tensor_fill_", "backward"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(op, ok[i])) return true;
    return false;
}

void tensor_check_bf16(const char *op, const Tensor *t) {
    char b[128];
    if (t->dtype == TENSOR_BF16 && !bf16_supported(op))
        tensor_fail(op, "bf16 %s is not supported (bf16 takes only casts, views, copies, matmul and attention; "
                    "cast to f32 first)", tensor_shape_str(t, b));
}

const TensorBackend *tensor_be(const char *op, const Tensor *t) {
    tensor_check_bf16(op, t);
    return tensor_backend_for(tensor_device(t));
}

void tensor_check_same(const char *op, const Tensor *a, const Tensor *b) {
    char sa[128], sb[128];
    if (a->dtype != b->dtype)
        tensor_fail(op, "dtype mismatch: %s %s vs %s %s", tensor_dtype_name(a->dtype), tensor_shape_str(a, sa),
                    tensor_dtype_name(b->dtype), tensor_shape_str(b, sb));
    if (tensor_device(a) != tensor_device(b))
        tensor_fail(op, "device mismatch: %s on %s vs %s on %s", tensor_shape_str(a, sa),
                    tensor_device(a) == TENSOR_CPU ? "cpu" : "cuda", tensor_shape_str(b, sb),
                    tensor_device(b) == TENSOR_CPU ? "cpu" : "cuda");
}

void tensor_check_float(const char *op, const Tensor *x) {
    if (x->dtype == TENSOR_I64) tensor_fail(op, "needs a floating-point tensor, got i64");
    tensor_check_bf16(op, x); /* composites (mean, var, norm) fail under their own name */
}

unsigned tensor_dim_mask(const char *op, int ndim, int ndims, const int *dims) {
    if (ndims == 0) return ndim ? (1u << ndim) - 1 : 0;
    unsigned m = 0;
    for (int i = 0; i < ndims; i++) {
        int d = tensor_dim_wrap(op, dims[i], ndim);
        if (m & (1u << d)) tensor_fail(op, "dim %d listed twice", dims[i]);
        m |= 1u << d;
    }
    return m;
}

/* ---- op table -------------------------------------------------------------------------------- */

#define TENSOR_OP_INFO_(id, nm, kd) [TENSOR_OP_##id] = {TENSOR_OP_##id, nm, kd},
const TensorOpInfo tensor_op_table[TENSOR_OP_COUNT] = {TENSOR_OP_LIST(TENSOR_OP_INFO_)};
#undef TENSOR_OP_INFO_
