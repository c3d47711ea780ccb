/* base/progress.c — see progress.h. */
#include <math.h>

#include "base/clock.h"
#include "base/progress.h"

void base_format_duration(char *buf, size_t n, double s) {
    if (!isfinite(s) || s < 0) snprintf(buf, n, "?");
    else if (s < 3600) snprintf(buf, n, "%d:%02d", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

void base_progress_begin(BaseProgress *p, int64_t start) {
    p->start = start;
    p->t0 = base_now();
    p->t_draw = p->t_line = 0;
    p->drawn = false;
}

void base_progress_update(BaseProgress *p, int64_t done, int64_t total, double loss, double lr, bool force) {
    double now = base_now(), el = now - p->t0;
    double rate = el > 0 ? (double)(done - p->start) / el : 0;
    bool last = done >= total;
    const char *suffix = p->count_suffix ? p->count_suffix : "";
    char eta[32];
    base_format_duration(eta, sizeof eta, rate > 0 ? (double)(total - done) / rate : NAN);
    if (p->tty) {
        /* at most 10 redraws a second: terminals are slow and the bar is for eyes */
        if (!force && !last && now - p->t_draw < 0.1) return;
        p->t_draw = now;
        int width = 24, fill = total ? (int)(width * done / total) : width;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
        bar[width] = 0;
        fprintf(p->out, "\r\033[K%s [%s] %lld/%lld%s  %.*f %s/s  ETA %s", p->name, bar, (long long)done,
                (long long)total, suffix, p->rate_digits, rate, p->unit, eta);
        if (p->show_loss) fprintf(p->out, "  loss %.6g", loss);
        p->drawn = true;
    } else {
        if (!force && !last) {
            if (p->every > 0) {
                if (done % p->every) return;
            } else {
                bool tenth = total >= 10 && done % (total / 10) == 0;
                if (!tenth && now - p->t_line < 10) return;
            }
        }
        p->t_line = now;
        fprintf(p->out, "%s: %s%lld/%lld%s", p->name, p->line_prefix ? p->line_prefix : "", (long long)done,
                (long long)total, suffix);
        if (p->show_loss) fprintf(p->out, "  loss %.6g  lr %.3g", loss, lr);
        fprintf(p->out, "  %.*f %s/s  ETA %s\n", p->rate_digits, rate, p->unit, eta);
    }
    fflush(p->out);
}

void base_progress_break(BaseProgress *p) {
    if (p->drawn) fputc('\n', p->out);
    p->drawn = false;
}

void base_progress_finish(BaseProgress *p, int64_t done, int64_t total, double loss, double lr) {
    if (p->drawn) base_progress_update(p, done, total, loss, lr, true);
    base_progress_break(p);
}
