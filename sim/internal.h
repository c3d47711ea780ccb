/* sim/internal.h — what the sim/ sources share and nobody else needs. Not a public header. */
#ifndef ANIMA_SIM_INTERNAL_H
#define ANIMA_SIM_INTERNAL_H

#include <stddef.h>

#include "base/clock.h"
#include "base/errbuf.h"

#endif
