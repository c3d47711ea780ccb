/* tests/sim_test_util.h — checks shared by the simulator's test files. */
#ifndef ANIMA_TESTS_SIM_TEST_UTIL_H
#define ANIMA_TESTS_SIM_TEST_UTIL_H

#include <stdint.h>

#include "sim/solver.h"

/* Rendered vertices of object a (sim_object_vertices: with a rig's displacement) inside object b's
 * rendered surface (generalized winding number > 1/2) deeper than tol (their distance from b's
 * surface); *any is raised by those inside at all. -1 when the winding structure fails. */
int64_t vertices_inside(SimObject *a, SimObject *b, double tol, int64_t *any);

#endif
