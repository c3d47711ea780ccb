/* datasets/config.h — JSON configs (cJSON) read against a schema: each command declares its
 * fields (type, default, range or choices) over a C struct; unknown keys, wrong types and
 * out-of-range values are errors naming the file and the key path ("optim.lr"). Configs are
 * also written back out as JSON (stored in checkpoints). */
#ifndef ANIMA_DATASETS_CONFIG_H
#define ANIMA_DATASETS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { DS_CFG_INT, DS_CFG_FLOAT, DS_CFG_BOOL, DS_CFG_STRING, DS_CFG_OBJECT } DsConfigType;

typedef struct DsConfigField {
    const char *key;
    DsConfigType type;
    size_t offset;                       /* offsetof(struct, member) */
    const char *def;                     /* default as JSON text; NULL: the key is required */
    double min, max;                     /* numbers: inclusive range (min > max: unchecked) */
    size_t size;                         /* strings: sizeof the char array */
    const char *const *choices;          /* strings: allowed values, NULL-terminated (or NULL) */
    const struct DsConfigField *fields;  /* objects: the nested schema, key NULL terminated */
    const char *help;
} DsConfigField;

/* Fill out (a struct laid out as the schema says) from the file; 0, or -1 with err set. */
int ds_config_load(const char *path, const DsConfigField *schema, void *out, char *err, size_t errlen);
/* The same from text; `source` names it in messages. text NULL or "" gives all defaults. */
int ds_config_parse(const char *text, const char *source, const DsConfigField *schema, void *out, char *err,
                    size_t errlen);
/* Apply "a.b=value" (value as JSON, or a bare string) on top of a filled struct. */
int ds_config_set(const char *assignment, const DsConfigField *schema, void *out, char *err, size_t errlen);
/* The struct as pretty JSON (malloc'd; free it). */
char *ds_config_to_json(const DsConfigField *schema, const void *cfg);

#endif
