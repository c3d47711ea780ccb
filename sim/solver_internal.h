/* sim/solver_internal.h — what the single-object solver's sources share: the prepared state
 * (struct SimPrepared) and the functions one file calls in another. solver.c: the object, its
 * rows, controls and outputs; solver_prepare.c: sim_object_prepare (the observable and exact
 * Dirichlet subspaces, the reduced mass factor, the controls' pull-backs through B, the
 * co-rotation's groups, the scratch) and the prepared state's accessors; solver_elastic.c: the
 * elastic term and its lagged, co-rotated Hessian; solver_terms.c: the step objective term by
 * term, its lagged Hessian and the step's start. Calls go solver_terms.c → solver_elastic.c →
 * solver_prepare.c and solver.c → solver_prepare.c, never back. Not a public header. */
#ifndef ANIMA_SIM_SOLVER_INTERNAL_H
#define ANIMA_SIM_SOLVER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/solver.h"

/* the elastic Hessian's (i, i') coordinate blocks computed (i ≤ i'; solver_elastic.c: PAIR_I, PAIR_J) */
#define NPAIR 6
/* Kg (SimPrepared) by column tiles: element (row, column j) of its rows × nb² at KG_AT (nb = 4(m + 1),
 * so nb² fills its tiles; a last partial tile would be padded with zeros) */
#define KG_TILE 16
#define KG_TILES(ncol) (((ncol) + KG_TILE - 1) / KG_TILE)
#define KG_AT(row, j, rows) (((j) / KG_TILE * (rows) + (row)) * KG_TILE + (j) % KG_TILE)
/* points per blocked Hessian product: W is 3·CHUNK × 6nb doubles (2.5 MB at m = 16) */
#define CHUNK 512

struct SimPrepared {
    /* exact Dirichlet: z⁽ⁱ⁾ = t · zp_rate⁽ⁱ⁾ + N y⁽ⁱ⁾ */
    int64_t ns;        /* constrained rows (points) */
    int64_t r;         /* null-space dimension (nb when unconstrained) */
    int64_t r_obs;     /* observable dimension per block (nb unless directions were cut) */
    double obs_kappa;  /* the smallest visibility ratio cut (0: none) */
    double *N;         /* nb × r, orthonormal columns; NULL when unconstrained */
    double *zp_rate;   /* 3 × nb */
    double *Lm;        /* Cholesky of the (reduced) mass block, r × r, for the stop bound */
    /* penalty Dirichlet, drags, force fields: pull-backs through B */
    double *pen_S, *pen_s, *pen_n;  /* per Dirichlet: nb × nb, nb, count */
    double *drag_S, *drag_s, *drag_g;
    double *force_m;                /* per field: Σ ρ V b over the region */
    /* contact points */
    int64_t np;
    const double *Xp, *Bp;
    /* the lagged elastic Hessian (SimNewtonOptions.elastic_lag): Σ_c V_c (dF/dz)ᵀ Ĥ_c (dF/dz), n × n,
     * unscaled; valid once assembled, stale when the last iteration that used it contracted poorly */
    double *Kel;
    bool kel_valid;
    /* its co-rotation under a rig (SimObject.rig_group; 0 groups: off): the integration points
     * by group (gidx, starting at gstart), the groups' unscaled elastic Hessians of the last
     * assembly (Kg: one nb × nb pair block per row, row k·ng + g for group g and pair PORD[k]
     * (solver_elastic.c), the diagonal blocks' rows first, stored by tiles of KG_TILE columns:
     * KG_AT), each group's rotation then (Rg0) and the rotations Kel was last composed for (Rgk),
     * scratch (Gg: the rule's G rows in group order; Cg, Og: the composition's coefficients and
     * output) */
    int ng;
    int64_t *gidx, *gstart;
    double *Rg0, *Rgk, *Gg;
    /* the rig_F (pointer and SimObject.rig_F_version) Rgk was last computed from: another
     * iteration of the same step finds Kel composed for it already */
    const double *rgk_F;
    uint64_t rgk_version;
    bool rgk_valid;
    /* with a subspace N (p->N), the groups' blocks are kept reduced, Nᵀ K_g(pair) N (r × r: the
     * turn Q ⊗ I commutes with I ⊗ N, so this is exact and the turn reads (r/nb)² of the numbers),
     * and the turn's result is the reduced elastic Hessian Kelr (3r × 3r, unscaled), which the
     * step Hessian (solver_terms.c) then leaves out of H for the caller to add after its
     * reduction (kelr_out). Gg then holds the G rows times N (3 × r per point), so a fresh
     * assembly is reduced too. */
    double *Kelr;
    bool kelr_out;
    float *Kg, *Cg, *Og; /* single precision: the composition reads ng·NPAIR·nb² numbers each step, and
                            the lagged Hessian only steers the direction (a 1e-7 error in it is far
                            below the lag's own) */
    /* sim_object_step's world of one (world.c), released with what it points into */
    void *solo;
    void (*solo_release)(void *);
    /* scratch */
    double *Ft, *PT, *W, *K, *up, *Aact, *Sact, *tmp;
    /* the start's memory (sim_object_predict): ż at the last prediction and that step's dt */
    double *zdot_prev, dt_prev;
    bool have_zdot_prev;
};

/* Frees p and all it holds, releasing its world of one first (NULL: nothing to do). */
void sim_prep_free(struct SimPrepared *p);

/* The elastic term at z: returns Σ_c V_c Ψ(F_c(z)) (unscaled) and adds scale·∇ to g and
 * scale·(PSD-projected Hessian) to H (n × n) when they are given; *nproj (when not NULL): the
 * points whose Hessian was projected. */
double sim_prep_elastic(const SimObject *o, struct SimPrepared *p, const double *z, double scale, double *g, double *H,
                        int *nproj);

/* The lagged elastic Hessian (SimNewtonOptions.elastic_lag) brought to z: reassembled at z when
 * `fresh` or not yet valid, else co-rotated to the rig's current pose (with groups). Unscaled, in
 * p->Kel (n × n), or with groups and a subspace in p->Kelr (3r × 3r), which p->kelr_out then says. */
void sim_prep_lagged_elastic(const SimObject *o, struct SimPrepared *p, const double *z, bool fresh, int *nproj);

#endif
