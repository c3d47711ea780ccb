/* autograd/engine.c — walks the recorded nodes in reverse creation order (node seq numbers
 * are a topological order), calling each op's backward and summing gradients per node. */
#include <stdlib.h>
#include <string.h>

#include "../tensor/internal.h"
#include "autograd.h"
#include "base/alloc.h"
#include "custom.h"

static uint64_t epoch;

typedef struct {
    TensorNode **v;
    int64_t n, cap;
} NodeVec;

static void vec_push(NodeVec *s, TensorNode *x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = base_realloc(s->v, sizeof *s->v * (size_t)s->cap);
    }
    s->v[s->n++] = x;
}

static int by_seq_desc(const void *a, const void *b) {
    uint64_t x = (*(TensorNode *const *)a)->seq, y = (*(TensorNode *const *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Every node reachable from the roots, sorted so consumers come before producers. */
static NodeVec collect(int n, Tensor *const *roots) {
    NodeVec order = {0}, stack = {0};
    epoch++;
    for (int i = 0; i < n; i++)
        if (roots[i] && roots[i]->node && roots[i]->node->visit != epoch) {
            roots[i]->node->visit = epoch;
            vec_push(&stack, roots[i]->node);
        }
    while (stack.n) {
        TensorNode *nd = stack.v[--stack.n];
        if (nd->released)
            tensor_fail("backward", "'%s' node already freed by an earlier backward (pass retain_graph)",
                        tensor_op_table[nd->op].name);
        vec_push(&order, nd);
        for (int i = 0; i < nd->n_inputs; i++) {
            Tensor *in = nd->inputs[i];
            if (in && in->node && in->node->visit != epoch) {
                in->node->visit = epoch;
                vec_push(&stack, in->node);
            }
        }
    }
    free(stack.v);
    if (order.n > 1) qsort(order.v, (size_t)order.n, sizeof *order.v, by_seq_desc); /* v is NULL when empty */
    return order;
}

/* ---- the gradients a backward pass made, freed when the pass no longer holds them ------------
 * ag_backward (not ag_grad, whose results are the gradients themselves) counts, per storage made
 * during the pass in the current scope, how many node slots (grad_acc) and handed-out input
 * gradients hold it; when the count falls to 0 the bytes go back to the scope
 * (tensor_storage_recycle) for the pass's next allocations, and a slot that alone holds its
 * storage accumulates in place. What a node's backward made in the scope and did not hand out
 * (its scratch: the 1 − y² of tanh's) is recycled when it returns (tensor_scope_log_begin). What the pass did not make (saved tensors, user gradients, the
 * leaves' .grad, which deliver_leaf copies into) is never counted, so never freed. The values
 * are those of the plain pass, bit for bit; a long pass's peak memory is what is live, not what
 * was ever made. */
typedef struct {
    TensorStorage *st;
    int64_t n;
} RcEntry;

typedef struct {
    RcEntry *v;
    int64_t cap, used;
    uint64_t born; /* storages with a larger serial were made by this pass */
    TensorScope *scope;
} Rc;

static bool rc_tracked(const Rc *rc, const Tensor *t) {
    return rc && t && t->storage && t->storage->device == TENSOR_CPU && t->storage->scope == rc->scope &&
           t->storage->serial > rc->born;
}

/* st's entry, or the empty slot where it would go (cap > 0) */
static RcEntry *rc_probe(const Rc *rc, const TensorStorage *st) {
    uint64_t h = (uint64_t)(uintptr_t)st * 0x9e3779b97f4a7c15ull;
    int64_t i = (int64_t)(h >> 20) & (rc->cap - 1);
    while (rc->v[i].st && rc->v[i].st != st) i = (i + 1) & (rc->cap - 1);
    return &rc->v[i];
}

/* st's entry, made (count 0) when absent */
static RcEntry *rc_find(Rc *rc, TensorStorage *st) {
    if (2 * (rc->used + 1) > rc->cap) {
        RcEntry *old = rc->v;
        int64_t oc = rc->cap;
        rc->cap = oc ? 2 * oc : 256;
        rc->v = base_calloc((size_t)rc->cap, sizeof *rc->v);
        for (int64_t i = 0; i < oc; i++)
            if (old[i].st) *rc_probe(rc, old[i].st) = old[i];
        free(old);
    }
    RcEntry *e = rc_probe(rc, st);
    if (!e->st) *e = (RcEntry){st, 0}, rc->used++;
    return e;
}

static bool rc_held(const Rc *rc, const TensorStorage *st) { return rc->cap && rc_probe(rc, st)->n > 0; }

static void rc_ref(Rc *rc, const Tensor *t) {
    if (rc_tracked(rc, t)) rc_find(rc, t->storage)->n++;
}

static void rc_unref(Rc *rc, const Tensor *t) {
    if (!rc_tracked(rc, t)) return;
    RcEntry *e = rc_find(rc, t->storage);
    if (e->n <= 0) tensor_fail("backward", "internal: a gradient released more often than held");
    if (--e->n == 0) tensor_storage_recycle(t->storage);
}

/* sum + g into a node's slot (sum: the slot's value or NULL); the slot's hold moves to the result */
static Tensor *acc(Rc *rc, Tensor *sum, Tensor *g) {
    if (!sum) {
        rc_ref(rc, g);
        return g;
    }
    if (rc_tracked(rc, sum) && rc_find(rc, sum->storage)->n == 1 && tensor_is_contiguous(sum) &&
        tensor_is_contiguous(g) && (sum->dtype == TENSOR_F32 || sum->dtype == TENSOR_F64)) {
        tensor_be("backward", sum)->binary(TENSOR_OP_ADD, sum, sum, g); /* elementwise: out may be a */
        return sum;
    }
    Tensor *r = tensor_add(sum, g);
    rc_ref(rc, r);
    rc_unref(rc, sum);
    return r;
}

static void check_grad_shape(const char *what, const Tensor *t, const Tensor *g) {
    char a[128], b[128];
    if (!tensor_same_shape(t, g) || t->dtype != g->dtype)
        tensor_fail("backward", "%s: gradient %s %s for a %s %s tensor", what, tensor_dtype_name(g->dtype),
                    tensor_shape_str(g, a), tensor_dtype_name(t->dtype), tensor_shape_str(t, b));
}

/* Leaf sink: either .grad (backward) or the slots of ag_grad. */
typedef struct {
    int n;
    Tensor *const *inputs;
    Tensor **grads;
} Sink;

static void deliver_leaf(Tensor *leaf, Tensor *g, Sink *sink) {
    if (sink) {
        for (int i = 0; i < sink->n; i++)
            if (sink->inputs[i] == leaf) sink->grads[i] = acc(NULL, sink->grads[i], g);
        return;
    }
    check_grad_shape("leaf", leaf, g);
    if (!leaf->grad) {
        TensorScope *prev = tensor_scope_switch(leaf->scope);
        leaf->grad = tensor_empty_like(leaf);
        tensor_scope_switch(prev);
        tensor_be("backward", leaf)->copy(leaf->grad, g);
    } else {
        tensor_add_(leaf->grad, g, 1.0);
    }
}

/* ---- leaf-ready hook ------------------------------------------------------------------------ */

static _Thread_local AgLeafHook leaf_hook;

AgLeafHook ag_leaf_hook_set(AgLeafHook hook) {
    AgLeafHook prev = leaf_hook;
    leaf_hook = hook;
    return prev;
}

/* A leaf that requires grad and the position in `order` of its last consumer (-1: a root that
 * is itself a leaf), slot breaking ties so reports come in a deterministic order. */
typedef struct {
    Tensor *leaf;
    int64_t last;
    int slot;
} LeafLast;

typedef struct {
    LeafLast *v;
    int64_t n, cap, next; /* next: the first entry not yet reported */
} LeafVec;

static void leaf_push(LeafVec *s, Tensor *leaf, int64_t last, int slot) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = base_realloc(s->v, sizeof *s->v * (size_t)s->cap);
    }
    s->v[s->n++] = (LeafLast){leaf, last, slot};
}

/* by leaf, and for each leaf its last consumer first (the entry that survives) */
static int by_leaf_last_desc(const void *a, const void *b) {
    const LeafLast *x = a, *y = b;
    uintptr_t p = (uintptr_t)x->leaf, q = (uintptr_t)y->leaf;
    if (p != q) return p < q ? -1 : 1;
    if (x->last != y->last) return x->last > y->last ? -1 : 1;
    return x->slot - y->slot;
}

static int by_last(const void *a, const void *b) {
    const LeafLast *x = a, *y = b;
    if (x->last != y->last) return x->last < y->last ? -1 : 1;
    return x->slot - y->slot;
}

/* Every leaf's last consumer, sorted by when run() finishes with it: order.v[k] is processed
 * k-th, and a leaf receives nothing after its last consumer has run. */
static LeafVec leaf_schedule(int n_out, Tensor *const *outputs, const NodeVec *order) {
    LeafVec s = {0};
    for (int i = 0; i < n_out; i++)
        if (!outputs[i]->node && outputs[i]->requires_grad) leaf_push(&s, outputs[i], -1, i);
    for (int64_t k = 0; k < order->n; k++) {
        const TensorNode *nd = order->v[k];
        for (int i = 0; i < nd->n_inputs; i++) {
            Tensor *in = nd->inputs[i];
            if (in && !in->node && in->requires_grad) leaf_push(&s, in, k, i);
        }
    }
    if (s.n > 1) qsort(s.v, (size_t)s.n, sizeof *s.v, by_leaf_last_desc);
    int64_t m = 0;
    for (int64_t j = 0; j < s.n; j++)
        if (m == 0 || s.v[m - 1].leaf != s.v[j].leaf) s.v[m++] = s.v[j];
    s.n = m;
    if (s.n > 1) qsort(s.v, (size_t)s.n, sizeof *s.v, by_last);
    return s;
}

/* report every leaf whose last consumer is at or before position k */
static void leaf_report(LeafVec *s, AgLeafHook h, int64_t k) {
    while (s->next < s->n && s->v[s->next].last <= k) {
        Tensor *leaf = s->v[s->next++].leaf;
        h.fn(leaf, h.user);
    }
}

/* ---- the backward pass ---------------------------------------------------------------------- */

static void run_node(TensorNode *nd, Tensor *g, Sink *sink, Rc *rc) {
    bool need[TENSOR_MAX_INPUTS] = {0}, any = false;
    Tensor *gin[TENSOR_MAX_INPUTS] = {0};
    for (int i = 0; i < nd->n_inputs; i++) {
        need[i] = nd->inputs[i] && nd->inputs[i]->requires_grad;
        any |= need[i];
    }
    if (any) {
        AgBackwardFn fn = ag_backward_fn(nd->op);
        if (!fn) tensor_fail("backward", "op '%s' has no backward", tensor_op_table[nd->op].name);
        int64_t mark = rc ? tensor_scope_log_begin(rc->scope) : 0;
        fn(nd, g, need, gin);
        for (int i = 0; i < nd->n_inputs; i++) rc_ref(rc, gin[i]); /* held while handed out (two may share bytes) */
        if (rc) { /* what the backward made and did not hand out was its scratch */
            TensorStorage *const *made;
            int64_t n = tensor_scope_log_end(rc->scope, &made);
            for (int64_t j = mark; j < n; j++)
                if (!rc_held(rc, made[j])) tensor_storage_recycle(made[j]);
            tensor_scope_log_truncate(rc->scope, mark);
        }
    }
    for (int i = 0; i < nd->n_inputs; i++) {
        if (!need[i] || !gin[i]) continue;
        Tensor *in = nd->inputs[i];
        check_grad_shape(tensor_op_table[nd->op].name, in, gin[i]);
        if (in->node) in->node->grad_acc = acc(rc, in->node->grad_acc, gin[i]);
        else deliver_leaf(in, gin[i], sink);
    }
    for (int i = 0; i < nd->n_inputs; i++) rc_unref(rc, gin[i]);
}

/* A run may start inside another run's backward: a custom op's create_graph backward calls
 * ag_grad (attention recomposes its naive path). The inner run then walks nodes of the outer
 * graph (upstream of the op's inputs), some holding a gradient the outer run has accumulated and
 * not used yet. So a run sets aside the grad_acc it finds on its nodes, starts them from none,
 * and puts the set-aside values back when it ends: a nested run leaves the outer one's state as
 * it was. (Before, the inner run added onto and then cleared those values, and the outer pass
 * lost them: the second derivative through attention with non-leaf q, k, v was wrong.) */
static void run(int n_out, Tensor *const *outputs, Tensor *const *grad_outputs, Sink *sink, bool retain) {
    Rc rcs = {.born = tensor_storage_serial_now(), .scope = tensor_scope_current()}, *rc = sink ? NULL : &rcs;
    NodeVec order = collect(n_out, outputs);
    uint64_t my_epoch = epoch; /* an inner run moves epoch on; this run's nodes carry >= my_epoch */
    Tensor **pending = NULL;
    for (int64_t k = 0; k < order.n; k++)
        if (order.v[k]->grad_acc) {
            if (!pending) pending = base_calloc((size_t)order.n, sizeof *pending);
            pending[k] = order.v[k]->grad_acc;
            order.v[k]->grad_acc = NULL;
        }
    /* the hook is about .grad: backward only, not ag_grad's slots */
    AgLeafHook hook = sink ? (AgLeafHook){0} : leaf_hook;
    LeafVec sched = {0};
    if (hook.fn) sched = leaf_schedule(n_out, outputs, &order);
    for (int i = 0; i < n_out; i++) {
        Tensor *o = outputs[i], *g = grad_outputs ? grad_outputs[i] : NULL;
        if (!o->requires_grad) tensor_fail("backward", "output %d does not require grad", i);
        if (!g) {
            if (tensor_numel(o) != 1) {
                char b[128];
                tensor_fail("backward", "implicit gradient needs a one-element output, got %s", tensor_shape_str(o, b));
            }
            g = tensor_ones_like(o);
        }
        check_grad_shape("output", o, g);
        if (o->node) o->node->grad_acc = acc(rc, o->node->grad_acc, g);
        else deliver_leaf(o, g, sink);
    }
    if (hook.fn) leaf_report(&sched, hook, -1);
    for (int64_t k = 0; k < order.n; k++) {
        TensorNode *nd = order.v[k];
        if (nd->grad_acc) {
            run_node(nd, nd->grad_acc, sink, rc);
            rc_unref(rc, nd->grad_acc); /* the slot is spent (reset below) */
        }
        if (hook.fn) leaf_report(&sched, hook, k);
    }
    free(sched.v);
    if (sink) { /* inputs that have producers: their accumulated output gradient */
        for (int i = 0; i < sink->n; i++)
            if (sink->inputs[i]->node && sink->inputs[i]->node->visit >= my_epoch)
                sink->grads[i] = sink->inputs[i]->node->grad_acc;
    }
    for (int64_t k = 0; k < order.n; k++) {
        order.v[k]->grad_acc = pending ? pending[k] : NULL;
        if (!retain) order.v[k]->released = true;
    }
    free(pending);
    free(order.v);
    free(rcs.v);
}

void ag_backward(Tensor *root, Tensor *grad_root, bool retain_graph) {
    bool prev = tensor_grad_set_enabled(false);
    run(1, &root, grad_root ? &grad_root : NULL, NULL, retain_graph);
    tensor_grad_set_enabled(prev);
}

void ag_grad(int n_out, Tensor *const *outputs, Tensor *const *grad_outputs, int n_in, Tensor *const *inputs,
             Tensor **grads, bool create_graph) {
    for (int i = 0; i < n_in; i++) grads[i] = NULL;
    Sink sink = {n_in, inputs, grads};
    bool prev = tensor_grad_set_enabled(create_graph);
    run(n_out, outputs, grad_outputs, &sink, true);
    tensor_grad_set_enabled(prev);
}

bool ag_no_grad_begin(void) { return tensor_grad_set_enabled(false); }
void ag_no_grad_end(bool previous) { tensor_grad_set_enabled(previous); }

void ag_zero_grad(int n, Tensor *const *params) {
    for (int i = 0; i < n; i++) {
        if (!params[i]->grad) continue;
        tensor_fill_(params[i]->grad, 0);
    }
}

void ag_custom_recomposed_grads(Tensor *y, Tensor *g, int n, Tensor *const *in, const bool *need, Tensor **gin) {
    Tensor *gr[TENSOR_MAX_INPUTS] = {0};
    ag_grad(1, &y, &g, n, in, gr, true);
    for (int i = 0; i < n; i++)
        if (need[i]) gin[i] = gr[i] ? gr[i] : tensor_zeros_like(in[i]);
}

Tensor *ag_custom_apply(const AgCustomOp *op, int n, Tensor *const *inputs, const void *ctx, size_t ctx_size) {
    if (n < 0 || n > TENSOR_MAX_INPUTS) tensor_fail(op->name, "custom op takes 0..%d inputs", TENSOR_MAX_INPUTS);
    void *c = NULL;
    if (ctx_size) {
        c = tensor_scope_alloc(tensor_scope_current(), ctx_size);
        if (ctx) memcpy(c, ctx, ctx_size);
        else memset(c, 0, ctx_size);
    }
    bool prev = tensor_grad_set_enabled(false);
    Tensor *out = op->forward(c, n, inputs);
    tensor_grad_set_enabled(prev);
    if (!out) tensor_fail(op->name, "forward returned no tensor");
    if (tensor_should_record(n, inputs)) {
        out = tensor_detach(out); /* own header: the node is ours */
        TensorNode *nd = tensor_node_record(TENSOR_OP_CUSTOM, out, n, inputs);
        nd->custom = op;
        nd->ctx = c;
    }
    return out;
}
