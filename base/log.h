/* base/log.h — where the library's messages go. The library never prints (only tools/, tests/
 * and bench/ do): a warning, a note or a status line is handed, as one line without its
 * newline, to the process's log sink, which tools/ installs (tools/cmd_util.c: stderr). With no
 * sink installed — the default, a program linking libanima — messages are dropped. Progress is
 * not a message: it goes to the per-call callbacks of the options that run it (optim/train.h,
 * models/physskin/eval.h). Exempt: the abort path of programmer errors (tensor_fail) and of an
 * exhausted allocator, which must reach stderr whatever the sink. */
#ifndef ANIMA_BASE_LOG_H
#define ANIMA_BASE_LOG_H

typedef enum {
    BASE_LOG_ERROR, /* why a call failed when it has no err buffer (ps_train, optim_train_finish) */
    BASE_LOG_WARN,  /* something the user should know and may want to change */
    BASE_LOG_INFO,  /* status: "resuming ... at step", "stopped after" */
    BASE_LOG_DEBUG, /* traces asked for by an environment variable */
} BaseLogLevel;

/* msg: one line, no trailing newline, already prefixed with what speaks ("anima fit: ..."). */
typedef void (*BaseLogFn)(void *user, BaseLogLevel level, const char *msg);

/* Installs the sink (NULL: drop every message). Set it before starting threads: messages may
 * come from any thread, the sink is read without a lock. */
void base_log_set_sink(BaseLogFn fn, void *user);
/* Formats one message (truncated at 4 KiB) and hands it to the sink; nothing without one. */
void base_logf(BaseLogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
