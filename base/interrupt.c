/* base/interrupt.c — see interrupt.h. */
#include "base/interrupt.h"

#include <string.h>

volatile sig_atomic_t base_interrupt_signal;

static void on_signal(int sig) { base_interrupt_signal = sig; }

void base_interrupt_catch(int sa_flags, BaseInterruptSaved *saved) {
    struct sigaction sa = {0}, old[2];
    _Static_assert(sizeof old <= sizeof saved->old, "BaseInterruptSaved is too small for two struct sigaction");
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = sa_flags;
    sigaction(SIGINT, &sa, &old[0]);
    sigaction(SIGTERM, &sa, &old[1]);
    memcpy(saved->old, old, sizeof old);
}

void base_interrupt_restore(const BaseInterruptSaved *saved) {
    struct sigaction old[2];
    memcpy(old, saved->old, sizeof old);
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}
