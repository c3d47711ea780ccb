/* sim/contact.h — IPC contact between bodies (physskin.md §7, paper Eq. 15; Li et al. 2020,
 * "Incremental Potential Contact", §4): the log barrier on point–triangle and point–point
 * distances, a spatial-hash broad phase over swept boxes, and continuous collision detection
 * along a linear step (exact for point pairs, additive for point–triangle pairs).
 *
 * Bodies are point sets, with the surface triangles over them when they have a surface: a
 * deformable object's binding vertices and mesh (or its cubature points, no triangles, when it
 * has no mesh) or a rigid body's mesh. Each point of one body meets the triangles of every other
 * body that has them; two point sets without triangles meet point to point. Points alone are not
 * enough between surfaces: the barrier between points stays finite, so a heavy, fast body pushes
 * its points between the other's (the pile scene's falling mug went through the other mug, with
 * hundreds of vertices inside it). No self-contact; never two static bodies.
 *
 * Why swept boxes: every point moves linearly in the line-search parameter α ∈ [0, 1] (x = X +
 * B z is linear in z, and the step is z + α Δz), so the box of x and x + Δx holds the whole
 * segment, and the box over a triangle's corners' segments holds the triangle for all α.
 * Inflating each box by d̂/2 gives a candidate set that is complete for the whole line search:
 * a pair whose inflated boxes do not overlap stays farther apart than d̂ at every α, so it
 * contributes no barrier energy and cannot collide. One broad phase per Newton iteration then
 * serves both the CCD bound and every Armijo trial. */
#ifndef ANIMA_SIM_CONTACT_H
#define ANIMA_SIM_CONTACT_H

#include <stdbool.h>
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
    int64_t nf;       /* its surface triangles over the points (0: a point cloud) */
    const int32_t *faces;
    int64_t ne;       /* its surface edges (sim_mesh_edges of the faces; 0: no edge–edge pairs) */
    const int32_t *edges;
    const double *edge_len2; /* ne rest squared edge lengths for the mollifier's ε_x, or NULL: no
                                mollifier (m = 1) */
    /* The surface's adjacency for the deduplicated constraint set (sim_contact_dedup), or NULL:
     * none. face_edges (nf × 3): triangle f's edge from corner k to k + 1 as an index into
     * edges (which then must be set, whatever ne says); edge_uses (ne): the triangles using each
     * edge; vert_coef (np): c_v = 1 − F_v + Σ_(e ∋ v) (u_e − 1), F_v the triangles at v (1 at
     * every vertex of a closed manifold). */
    const int32_t *face_edges, *edge_uses, *vert_coef;
} SimContactBody;

/* A point–point pair (f = −1: points p of a and q of b, a < b), a point–triangle pair (f ≥ 0:
 * point p of a and triangle f of b, any a ≠ b; q unused) or an edge–edge pair (f = SIM_PAIR_EE:
 * edge p of a and edge q of b, a < b). */
#define SIM_PAIR_EE (-2)
/* The deduplication's terms (sim_contact_dedup): point p of a against edge q of b's surface
 * (SIM_PAIR_PE, weight −(u_q − 1)) or against vertex q of b's surface (SIM_PAIR_PV, weight c_q). */
#define SIM_PAIR_PE (-3)
#define SIM_PAIR_PV (-4)
typedef struct {
    int32_t a, b;
    int32_t p, q;
    int32_t f;
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
    double *box;      /* per point and triangle: its swept, inflated box (lo, hi) */
    int64_t use_cap;
    int64_t *bucket, bucket_cap; /* one bucket's entries, points and triangles apart */
    uint64_t *rkey;   /* sim_contact_dedup's radix sort: keys and order (two buffers each), the pairs */
    uint32_t *rord;
    SimContactPair *rtmp;
    int64_t rcap;
} SimContactSet;

void sim_contact_set_free(SimContactSet *s);

/* Broad phase: all pairs of different bodies, not both static, whose swept boxes, inflated by
 * `margin` each, overlap, each once: a point against each triangle of another body that has
 * triangles (the triangle's box over its corners' sweeps), and two points unless both bodies
 * have triangles (then their point–triangle pairs, which include the closest corners, cover
 * them: points alone would let a fast body push its points between the other's, the barrier
 * between points staying finite); and two edges of different bodies that both have edges (the
 * edge's box over its ends' sweeps: IPC's edge–edge pairs, without which two edges can pass
 * through each other while every corner stays clear of every face). Spatial hash with counting sort: cells of side max(2 margin,
 * the largest box), so a box covers at most 2 cells per axis; entities outside every other
 * body's (inflated, swept) bounding box are not inserted at all. 0, or -1 out of memory. */
int sim_contact_broad_phase(const SimContactBody *bodies, int nbodies, double margin, SimContactSet *out);

/* Deduplicates the point–surface part of the constraint set (Li et al. 2020's constraints are
 * feature pairs, each counted once). A point p near a surface meets every triangle T within
 * reach through the distance to T's closest feature; where that feature is an edge e or a vertex
 * v, every triangle at e (or v) reports the same distance, and the plain sum over point–triangle
 * pairs counts the one contact u_e (or F_v) times: a point over a closed mesh's vertex pushed 3–6
 * times as hard as over a face. Dropping the repeats by the closest feature's type would make the
 * energy jump where the closest feature changes (a point crossing from T₁'s face over e: b(d_T₁) +
 * b(d_e) before, b(d_e) after). So the set gets inclusion–exclusion terms instead (the max
 * approximation of Li, Ferguson et al. 2023, without its area weights): each (p, e) once with
 * weight −(u_e − 1), each (p, v) once with weight c_v, all distances the clamped closest-point
 * ones. Σ_T b − Σ_e (u_e − 1) b + Σ_v c_v b is continuous, equals b(d) exactly where the triangles
 * at the closest feature agree on it (face, edge or vertex), and stays ≥ the largest single
 * triangle's term (each edge's negative term is paired with one of its triangles, whose distance
 * is no larger). The terms come from the set's point–triangle pairs (every (p, e) or (p, v) within
 * reach has its triangles' pairs there, their distances being no larger), sorted and unique, and
 * need no CCD of their own (their distance is never below their triangles'). Edge–edge pairs
 * are left as they are. Bodies without face_edges get none. 0, or -1 out of memory. */
int sim_contact_dedup(const SimContactBody *bodies, SimContactSet *set);
/* A pair's weight in the barrier sum: 1, or a deduplication term's −(u_e − 1) or c_v. */
double sim_contact_pair_weight(const SimContactBody *bodies, const SimContactPair *q);
/* Per surface, the adjacency sim_contact_dedup reads: *face_edges (nf × 3, into edges as
 * sim_mesh_edge_uses sorts them) and *vert_coef (np); malloc'd, the caller frees. 0, or -1 out
 * of memory. */
int sim_mesh_dedup_tables(int64_t np, int64_t nf, const int32_t *faces, int64_t ne, const int32_t *edges,
                          const int32_t *uses, int32_t **face_edges, int32_t **vert_coef);

/* The unique undirected edges of a triangle mesh, each (i < j) once, sorted: *edges (2 × *ne,
 * malloc'd, the caller frees). 0, or -1 out of memory. */
int sim_mesh_edges(int64_t nf, const int32_t *faces, int64_t *ne, int32_t **edges);
/* The same, and with uses (may be NULL) how many triangles use each edge (*ne entries, malloc'd):
 * 2 everywhere on a closed manifold surface. 0, or -1 out of memory. */
int sim_mesh_edge_uses(int64_t nf, const int32_t *faces, int64_t *ne, int32_t **edges, int32_t **uses);

/* The closest points of segments [p0, p1] and [q0, q1]: parameters s, t ∈ [0, 1] of p0 + s (p1 − p0)
 * and q0 + t (q1 − q0); returns the distance. Parallel or degenerate segments: one of the closest
 * pairs (the parameter of the first segment clamped from the second's endpoints). */
double sim_segment_segment(const double p0[3], const double p1[3], const double q0[3], const double q1[3], double *s,
                           double *t);

/* IPC's edge–edge mollifier (Li et al. 2020, §4.3): with c = |e0 × e1|², m = (2 − c/ε_x) c/ε_x
 * for c < ε_x, else 1, ε_x = 10⁻³ |E0|²|E1|² from the rest edges. The barrier of an edge pair is m b(d):
 * it fades out as the edges turn parallel, where the segment distance's gradient turns and the
 * point–triangle pairs of the edges' ends carry the contact. Returns m; ∂m/∂e0, ∂m/∂e1 when given. */
double sim_ee_mollifier(const double e0[3], const double e1[3], double eps_x, double dm0[3], double dm1[3]);

/* One edge pair's mollified barrier E = m(x) b(d(x)) over its 12 coordinates x = (p0, p1, q0, q1):
 * value, gradient g (12) and exact Hessian H (12 × 12, row-major) when given (second-order forward
 * differentiation of the distance of the pair's closest-feature type: line–line, point–line or
 * point–point). For the derivative checks and for any solver that wants the exact pair Hessian;
 * barrier.c holds the closest points' parameters and m fixed in its Hessian (world.h). */
double sim_ee_barrier(const double x[12], double dhat, double eps_x, double g[12], double H[144]);

/* IPC's lagged smoothed Coulomb friction for one pair (Li et al. 2020, §5): with the tangent basis
 * T (two unit rows ⊥ the lagged normal, 6 numbers) and Δ the pair's relative displacement since
 * the step's start, u = T Δ (2) slips and dissipates c φ(|u|), c = μ λ (the lagged normal force
 * times μ), φ′(y) = f₁(y/ε), f₁(s) = 2s − s² for s < 1, 1 beyond, ε = ε_v dt: Coulomb's force c
 * opposing the slip, smoothed to a stiff spring below a slip speed ε_v. φ(y) = y²/ε − y³/(3ε²)
 * below ε, y − ε/3 beyond (C¹ at ε). Returns the value; the gradient in Δ (3) and its Hessian
 * (3 × 3, row-major) when given — Tᵀ H_u T with H_u PSD: c[(f₁/y) I − u uᵀ/(y ε²)] below ε
 * (eigenvalues f₁′ ≥ 0, f₁/y > 0), c (I − û ûᵀ)/y beyond. */
double sim_friction(const double D[3], const double T[6], double c, double eps, double g[3], double H[9]);
/* The majorizer of sim_friction's term at Δ: H = c (f₁(y/ε)/y) Tᵀ T, y = |T Δ|. Since φ′(y)/y is
 * nonincreasing, φ(√t) is concave in t, so for every Δ′
 *   c φ(|T Δ′|) ≤ c φ(y) + gᵀ(Δ′ − Δ) + ½ (Δ′ − Δ)ᵀ H (Δ′ − Δ)
 * (the bound iteratively reweighted least squares uses): a Newton model with this H lies above the
 * friction term along any step. H ⪰ the exact Hessian: equal across the slip, stiffer along it
 * (c/y where the exact one has 0 when sliding). world.c's friction pairs take it where the slip
 * turned or slowed (SimContactOptions.friction_majorize). */
void sim_friction_majorizer(const double D[3], const double T[6], double c, double eps, double H[9]);

/* The closest point of triangle (a, b, c) to p, as barycentric weights w (Σ w = 1, w ≥ 0: the
 * face, an edge or a vertex); returns the distance. */
double sim_point_triangle(const double p[3], const double a[3], const double b[3], const double c[3], double w[3]);

/* A pair's separation at α as weighted sums over its two sides: r = Σ_i u_i x_i − Σ_j w_j y_j, with
 * (u, ia) side a's weights and points (2: the point p and −1, or the edge's ends at the closest
 * point's parameter), (w, ib) side b's (3: a point, the triangle's corners or the edge's ends,
 * −1 unused); returns |r|. */
double sim_contact_pair_stencil(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3],
                                double u[2], int32_t ia[2], double w[3], int32_t ib[3]);
/* The mollifier of an edge–edge pair at α (1 for the other kinds, and without edge_len2). */
double sim_contact_pair_mollifier(const SimContactBody *bodies, const SimContactPair *q, double alpha);

/* A pair's separation at α: r = x_p − Σ_j w_j y_j (y the other body's point, w = (1, 0, 0), or the
 * triangle's corners with the closest point's weights), its length returned; w and the corner
 * indices (idx, −1 where unused) filled when given. */
double sim_contact_pair_vector(const SimContactBody *bodies, const SimContactPair *q, double alpha, double r[3],
                               double w[3], int32_t idx[3]);

/* Point–point CCD (exact for linear trajectories): the largest α ≤ 1 such that along [0, α]
 * every pair's distance stays ≥ s × its distance at α = 0 (s = min_sep ∈ (0, 1)), i.e. the
 * smaller root of ‖r + α Δr‖² = s²‖r‖². IPC caps the step at a fraction of the time of impact
 * the same way (Li et al. 2020 §4.2, "filtered line search"). Returns 1 when nothing limits. */
double sim_contact_ccd(const SimContactBody *bodies, const SimContactSet *set, double min_sep);
/* Point–triangle and edge–edge pairs take additive CCD (Li, Kaufman, Jiang 2021): advance α by (d − s d₀)/l with
 * l ≥ the rate at which the distance can shrink (max over one side's |Δx| + max over the other's), which can never step
 * past the first α where d = s d₀; conservative, at most 64 advances per pair. */

/* The smallest pair distance over the set at α (INFINITY when empty). */
double sim_contact_min_distance(const SimContactBody *bodies, const SimContactSet *set, double alpha);

/* ---- the contact options of a world (sim/world.h) and its contact materials ---------------- */

/* contact materials per world (the default one, 0, and up to 15 named ones) */
#define SIM_CONTACT_MATERIALS 16

typedef struct {
    bool enabled;     /* false: objects are stepped independently (no pairs at all) */
    double dhat;      /* barrier reach d̂ (m); 0: 1.5 × the largest median nearest-neighbour spacing
                         of any body's contact points, so no point can slip between two others */
    double stiffness; /* κ (N/m), fixed; 0: automatic (world.c support_kappa): each body resting in
                         its initial orientation on a flat support sits at d̂/2 or above, every
                         contact point counted once; then raised as kappa_adapt says */
    double kappa_adapt; /* the automatic κ doubles (up to 100 × its start) at a step whose closest
                         pair is inside kappa_adapt × d̂ and closer than at the last step (IPC's
                         adaptive κ) (0.1); 0: never */
    double min_sep;   /* CCD: a step may shrink a pair's distance to this fraction, (0, 1) (0.2) */
    bool edge_edge;   /* edge–edge pairs (with the mollifier) between bodies with surfaces besides the
                         point–triangle ones (true); false: two edges can pass through each other */
    double proxy_cells; /* collision proxies (sim/proxy.h): contact on each mesh's vertex clustering
                         with cells of side max(diag / proxy_cells, dhat) (diag: the object's rest
                         bounding-box diagonal) (20); 0: contact on the render mesh itself */
    double mu;        /* friction coefficient between bodies and against planes (IPC's lagged
                         smoothed Coulomb friction, friction.c), for every pair of contact materials
                         the table below does not set; 0: frictionless (0) */
    double eps_v;     /* slip speed (m/s) below which friction is smoothed to a stiff spring (1e-3) */
    bool friction_majorize; /* a friction pair's Newton Hessian is its majorizer (sim_friction_majorizer)
                         where its slip turned or slowed since the step's last iteration (true);
                         false: always the exact Hessian (same solution, more iterations) */
    bool dedup;       /* the deduplicated point–surface constraint set (contact.h: sim_contact_dedup,
                         each point–edge and point–vertex contact counted once) (true); false: the
                         plain sum over point–triangle pairs */
    /* μ per pair of contact materials: each deformable (SimObject.contact_material), rigid body
     * (SimRigid.contact_material) and plane (SimPlane.material) names one, 0 the default; a pair
     * (i, j) with mu_set[i][j] (kept symmetric) rubs with mu_pair[i][j], every other pair with mu.
     * Flags, not a sentinel value, so that a zeroed table means "mu everywhere" and a pair may be
     * frictionless (μ 0) under a nonzero default. */
    bool mu_set[SIM_CONTACT_MATERIALS][SIM_CONTACT_MATERIALS];
    double mu_pair[SIM_CONTACT_MATERIALS][SIM_CONTACT_MATERIALS];
} SimContactOptions;

/* μ between contact materials i and j under c (c->mu unless the pair table sets it) */
double sim_contact_mu(const SimContactOptions *c, int i, int j);
/* sets μ between materials i and j (both orders); 0, or -1 when i or j is out of range or μ < 0 */
int sim_contact_set_mu(SimContactOptions *c, int i, int j, double mu);

/* the defaults the comments above give */
void sim_contact_defaults(SimContactOptions *c);
/* whether i names a contact material, [0, SIM_CONTACT_MATERIALS) */
bool sim_contact_material_ok(int i);
/* whether any pair of materials rubs under c (μ > 0 by default or in the table): else no friction */
bool sim_contact_any_friction(const SimContactOptions *c);

#endif
