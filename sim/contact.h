/* sim/contact.h — point-pair IPC contact between bodies (physskin.md §7, paper Eq. 15; Li et al.
 * 2020, "Incremental Potential Contact", §4): the log barrier, a spatial-hash broad phase over
 * swept point boxes, and point–point continuous collision detection along a linear step.
 *
 * Bodies are point sets: a deformable object's contact points (its binding vertices, or its
 * cubature points when it has none) or a rigid body's mesh vertices. Pairs are only formed
 * between points of different bodies (no self-contact) and never between two static bodies.
 *
 * Why swept boxes: every point moves linearly in the line-search parameter α ∈ [0, 1] (x = X +
 * B z is linear in z, and the step is z + α Δz), so the box of x and x + Δx holds the whole
 * segment. Inflating each box by d̂/2 gives a candidate set that is complete for the whole line
 * search: a pair whose inflated boxes do not overlap stays farther apart than d̂ at every α, so it
 * contributes no barrier energy and cannot collide. One broad phase per Newton iteration then
 * serves both the CCD bound and every Armijo trial. */
#ifndef ANIMA_SIM_CONTACT_H
#define ANIMA_SIM_CONTACT_H

#include <stdint.h>

/* b(d) = −(d − d̂)² ln(d / d̂) on 0 < d < d̂, 0 beyond (IPC Eq. 6); b′ and b″ from physskin.md §7.
 * b is C² at d̂, b → ∞ as d → 0, b″ ≥ 0 on (0, d̂). d ≤ 0 gives +∞ (b′, b″ NaN-free: −∞, +∞). */
double sim_barrier(double d, double dhat, double *db, double *d2b);

/* The IPC point–point pair Hessian, PSD-projected. With n = (x_p − x_q)/d the Hessian of b(‖x_p −
 * x_q‖) is [[h, −h], [−h, h]], h = b″ n nᵀ + (b′/d)(I − n nᵀ); its eigenvalues are 2·eig(h) and
 * 0, and eig(h) = {b″, b′/d, b′/d}. b′ < 0 inside d̂, so the projection (Teran et al. 2005 style
 * clamping, as IPC does per contact) keeps c n nᵀ with c = max(b″, 0). Returns c. */
double sim_barrier_pair_curvature(double d, double dhat);

typedef struct {
    int64_t np;       /* points */
    const double *x;  /* np × 3 world positions at α = 0 */
    const double *dx; /* np × 3 displacement over the step (x(α) = x + α dx), or NULL: static */
    int is_static;    /* a body never paired with another static body (rigid bodies in the solve) */
} SimContactBody;

typedef struct {
    int32_t a, b;     /* bodies, a < b */
    int32_t p, q;     /* points in a and b */
} SimContactPair;

typedef struct {
    SimContactPair *pairs;
    int64_t n, cap;
    /* hash scratch, reused between calls */
    uint64_t *keys;
    int64_t *ent, *count;
    int32_t *cell;
    int64_t ent_cap, table_cap;
    unsigned char *use;
    double *box;      /* per point: its swept, inflated box (lo, hi) */
    int64_t use_cap;
} SimContactSet;

void sim_contact_set_free(SimContactSet *s);

/* Broad phase: all pairs (a < b, not both static) whose swept boxes, inflated by `margin` each,
 * overlap; each pair once. Spatial hash with counting sort: cells of side max(2 margin, the
 * largest swept extent), so a box covers at most 2 cells per axis; points outside every other
 * body's (inflated, swept) bounding box are not inserted at all. 0, or -1 out of memory. */
int sim_contact_broad_phase(const SimContactBody *bodies, int nbodies, double margin, SimContactSet *out);

/* Point–point CCD (exact for linear trajectories): the largest α ≤ 1 such that along [0, α]
 * every pair's distance stays ≥ s × its distance at α = 0 (s = min_sep ∈ (0, 1)), i.e. the
 * smaller root of ‖r + α Δr‖² = s²‖r‖². IPC caps the step at a fraction of the time of impact
 * the same way (Li et al. 2020 §4.2, "filtered line search"). Returns 1 when nothing limits. */
double sim_contact_ccd(const SimContactBody *bodies, const SimContactSet *set, double min_sep);

/* The smallest pair distance over the set at α (INFINITY when empty). */
double sim_contact_min_distance(const SimContactBody *bodies, const SimContactSet *set, double alpha);

#endif
