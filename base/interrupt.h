/* base/interrupt.h — a stop asked for by SIGINT or SIGTERM, caught into a flag that a long loop
 * polls between its steps (setting a sig_atomic_t is all a handler may safely do). Used by the
 * training loop (optim/train.h) and the programs' own long runs. */
#ifndef ANIMA_BASE_INTERRUPT_H
#define ANIMA_BASE_INTERRUPT_H

#include <signal.h>

/* The last SIGINT or SIGTERM caught while a catch was on; 0 when none was since the caller last
 * cleared it (a catch does not clear it). */
extern volatile sig_atomic_t base_interrupt_signal;

/* The SIGINT and SIGTERM actions a catch replaced: two struct sigaction, held as bytes so that
 * this header compiles in strict C11 (struct sigaction is POSIX, behind feature macros). */
typedef struct {
    _Alignas(16) unsigned char old[512];
} BaseInterruptSaved;

/* From now until base_interrupt_restore, SIGINT and SIGTERM set base_interrupt_signal (an empty
 * mask; sa_flags as sigaction's: SA_RESETHAND lets a second signal kill at once). The actions
 * replaced go to *saved. */
void base_interrupt_catch(int sa_flags, BaseInterruptSaved *saved);
/* The actions base_interrupt_catch replaced, back. */
void base_interrupt_restore(const BaseInterruptSaved *saved);

#endif
