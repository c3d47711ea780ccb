/* tools/cmd.h — the subcommands of the anima program. */
#ifndef ANIMA_CMD_H
#define ANIMA_CMD_H

typedef struct {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
} AnimaCommand;

int cmd_demo(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_mesh(int argc, char **argv);

#endif
