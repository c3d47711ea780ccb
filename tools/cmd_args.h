/* tools/cmd_args.h — the subcommands' argv, read from one table of options per command: the same
 * --help layout, the same --set handling for commands with a JSON config (datasets/config.h), and
 * the same messages ("anima sim: unknown argument '--foo' (see anima sim --help)", "anima fit:
 * --steps expects a positive integer, got 'x' (see ...)", "anima gs: --out needs a value (see ...)"),
 * each followed by the usage line; a bad argument exits 2. */
#ifndef ANIMA_TOOLS_CMD_ARGS_H
#define ANIMA_TOOLS_CMD_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "datasets/config.h"

typedef enum {
    CMD_ARG_FLAG,   /* bool: set true */
    CMD_ARG_INT,    /* int64_t */
    CMD_ARG_UINT,   /* uint64_t, the whole range (seeds); min/max unused */
    CMD_ARG_DOUBLE, /* double, finite */
    CMD_ARG_STRING, /* const char *: the argument itself */
    CMD_ARG_CHOICE, /* const char *, one of choices */
    CMD_ARG_LIST,   /* CmdArgList: every occurrence, in order (--set key=value) */
    CMD_ARG_KEY,    /* CmdArgList: a shortcut for --set key=VALUE (key: the config key) */
    CMD_ARG_SIZE,   /* int[2]: "WxH", each of the two within min..max */
} CmdArgKind;

typedef struct {
    const char *v[64];
    int n;
    char buf[4096]; /* the "key=value" texts of CMD_ARG_KEY options */
    size_t used;
} CmdArgList;

typedef struct {
    const char *name; /* "--steps" */
    CmdArgKind kind;
    void *dst;
    const char *meta; /* the value's name in the help ("N", "FILE") */
    const char *help;
    /* numbers: min < max bounds both ends (inclusive); max < min bounds only from below (min 1:
     * positive); both 0: unbounded */
    double min, max;
    const char *const *choices; /* CMD_ARG_CHOICE: NULL-terminated */
    bool required;
    const char *key; /* CMD_ARG_KEY: the config key it sets */
    bool above_min;  /* numbers: the lower bound is exclusive (min 0: positive) */
} CmdArg;

typedef struct {
    const char *cmd;      /* "anima sim" (and the subcommand: "anima sim skinning") */
    const char *usage;    /* after cmd in the usage line: "--scene FILE.json --out DIR [options]" */
    const char *about;    /* one line under the usage line (or NULL) */
    const CmdArg *args;   /* name NULL terminated */
    const char *footer;   /* after the options in --help (or NULL) */
    int min_pos, max_pos; /* positional arguments allowed */
    /* the config schema whose keys --help lists after the options (NULL: none), under keys_title
     * ("config keys (...)"): each key path with its help, type, default and range */
    const DsConfigField *keys;
    const char *keys_title;
} CmdArgSpec;

enum { CMD_ARGS_OK = 0, CMD_ARGS_HELP = 1, CMD_ARGS_BAD = 2 };

/* Reads argv[first..argc): options by the table, the rest into pos (npos of them). -h/--help
 * prints the help to stdout: CMD_ARGS_HELP (exit 0). A bad argument prints its message and the
 * usage line to errf: CMD_ARGS_BAD (exit 2). errf NULL: silent, help included (MPI ranks other
 * than 0). */
int cmd_args_parse(const CmdArgSpec *spec, int argc, char **argv, int first, FILE *errf, const char **pos,
                   int *npos);
void cmd_args_help(const CmdArgSpec *spec, FILE *f);
/* The keys of a config schema, one per line ("  model.width   d (paper 768) (integer, default 768,
 * 1 to 65536)"), nested objects as a.b, arrays of objects as a[].b; a key without a help string
 * shows "UNDOCUMENTED" (tests/test_cli.c requires none). */
void cmd_args_help_keys(const DsConfigField *schema, const char *title, FILE *f);
/* "anima x: <message> (see anima x --help)" and the usage line on errf (NULL: nothing); returns CMD_ARGS_BAD. */
int cmd_args_fail(const CmdArgSpec *spec, FILE *errf, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A config from path (NULL: all defaults), then each --set in order; errors go to errf as
 * "anima x: <file: key: problem>". 0, or CMD_ARGS_BAD. */
int cmd_args_config(const CmdArgSpec *spec, FILE *errf, const char *path, const CmdArgList *sets,
                    const DsConfigField *schema, void *cfg);

/* The config of a training command that writes run_dir/ckpt.h5: with --resume, no --config and a
 * checkpoint there, the config that checkpoint stores, then each --set (a run continues with its
 * own model, not the built-in defaults, whose sizes need not match it); otherwise as
 * cmd_args_config. *from_ckpt says which (may be NULL); the first case says so on errf. */
int cmd_args_config_run(const CmdArgSpec *spec, FILE *errf, const char *path, const CmdArgList *sets,
                        const DsConfigField *schema, void *cfg, bool resume, const char *run_dir, bool *from_ckpt);

#endif
