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

#endif
