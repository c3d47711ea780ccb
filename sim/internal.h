/* sim/internal.h — what the sim/ sources share and nobody else needs. Not a public header. */
#ifndef ANIMA_SIM_INTERNAL_H
#define ANIMA_SIM_INTERNAL_H

#include <stddef.h>

#include "base/clock.h"
#include "base/errbuf.h"
#include "sim/solver.h"

/* The object's rows Bc, Gc, Bv were changed in place (a fixed region's falloff, the rig's
 * complementary projection, sim/rig.c): the optimized cubature's row copies and the mass
 * matrices M_b, mvec follow, and the object must be prepared again. 0, or -1 (memory). */
int sim_object_rows_changed(SimObject *o);

/* Linear blend skinning at one point p: x = Σ_j w_j S_j p and, when F is not NULL, its
 * gradient F = Σ_j w_j A_j + (S_j p) ⊗ ∇w_j (row-major 3×3), for bone transforms S_j given as
 * row-major 3×4 affine rows every `stride` doubles (12: 3×4, 16: 4×4). dw: ∇w_j, 3 per bone. */
void sim_lbs_point(int nbones, const double *S, int stride, const double p[3], const double *w, const double *dw,
                   double x[3], double *F);

#endif
