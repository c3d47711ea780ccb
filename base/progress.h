/* base/progress.h — the progress display of the `anima` commands and the duration format it
 * shows. On a terminal a bar redrawn in place (at most 10 times a second) with the rate, the ETA
 * and optionally the loss; otherwise (logs, pipes) plain lines at a chosen cadence. Library code
 * never prints progress: it reports it through a callback in its options (optim/train.h), and
 * tools/ installs this display as that callback. */
#ifndef ANIMA_BASE_PROGRESS_H
#define ANIMA_BASE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s seconds as "m:ss" below an hour, "h:mm:ss" from one, "?" when negative or not finite
 * (an ETA before any rate is known). */
void base_format_duration(char *buf, size_t n, double s);

typedef struct {
    FILE *out;                /* where it draws (stderr) */
    const char *name;         /* starts every line: "anima fit" */
    const char *unit;         /* what is counted, plural, for the rate: "steps", "shapes" */
    const char *count_suffix; /* after "done/total" (" shapes"), or NULL */
    const char *line_prefix;  /* lines only, before "done/total" ("step "), or NULL */
    int rate_digits;          /* decimals of the rate */
    bool tty;                 /* the bar; otherwise lines */
    bool show_loss;           /* the loss on the bar, the loss and learning rate on lines */
    int64_t every;            /* lines: one every `every` items and the last; 0: one at every
                                 tenth of the total or after 10 s, whichever comes first */
    /* state */
    int64_t start;            /* items done when the display began (a resumed run) */
    double t0, t_draw, t_line;
    bool drawn;               /* a bar is on the current line */
} BaseProgress;

/* Starts the clock: the rate counts items past start from now on. */
void base_progress_begin(BaseProgress *p, int64_t start);
/* done of total items; loss and lr are shown with show_loss. force draws even when the cadence
 * would skip this update. */
void base_progress_update(BaseProgress *p, int64_t done, int64_t total, double loss, double lr, bool force);
/* Before any other message: ends the bar's line so the message starts on its own. */
void base_progress_break(BaseProgress *p);
/* The last redraw of a bar (the final count), then its line ended; lines need nothing more. */
void base_progress_finish(BaseProgress *p, int64_t done, int64_t total, double loss, double lr);

#endif
