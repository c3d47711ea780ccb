/* tools/cmd_util.c — what the subcommands share. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "tools/cmd.h"

int cmd_make_dirs(const char *dir) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || !*p) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            if (!c) break;
            *p = c;
        }
    }
    return 0;
}
