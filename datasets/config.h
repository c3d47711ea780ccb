/* datasets/config.h — JSON configs (cJSON) read against a schema: each command (and sim/scene.c
 * for scenes) declares its fields (type, default, range or choices) over a C struct: numbers,
 * strings, nested objects, 3-vectors and arrays of objects. Unknown keys, wrong types and
 * out-of-range values are errors naming the file and the key path ("optim.lr",
 * "objects[1].pose.translate"). Configs are also written back out as JSON (stored in
 * checkpoints). */
#ifndef ANIMA_DATASETS_CONFIG_H
#define ANIMA_DATASETS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    DS_CFG_INT,    /* int64_t */
    DS_CFG_FLOAT,  /* double */
    DS_CFG_BOOL,   /* bool */
    DS_CFG_STRING, /* char[size] */
    DS_CFG_OBJECT, /* a nested struct at offset, described by fields */
    DS_CFG_VEC3,   /* double[3]; min/max bound each element */
    DS_CFG_ARRAY,  /* an array of objects: at offset a pointer to elem_size-byte structs described by
                      fields (allocated by the reader; ds_config_free), at count_offset the int
                      count; min/max bound the count */
} DsConfigType;

/* def: absent, the field keeps the value already in the struct (zero in an array element) — for
 * defaults computed at run time, or keys whose absence means something (see `present`). Not
 * for arrays. */
extern const char DS_CFG_KEEP[];
/* present: where a bool records whether the key was given (the offset is stored + 1 so that 0
 * can mean none) */
#define DS_CFG_PRESENT(type, member) (offsetof(type, member) + 1)

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
    size_t elem_size, count_offset;      /* arrays: sizeof an element, offsetof the int count */
    size_t present;                      /* DS_CFG_PRESENT(...) or 0 */
} DsConfigField;

/* Fill out (a struct laid out as the schema says) from the file; 0, or -1 with err set (and no
 * array left allocated). A directory, an empty (or all-whitespace) file and a read error are
 * errors naming the path, never read as {}. */
int ds_config_load(const char *path, const DsConfigField *schema, void *out, char *err, size_t errlen);
/* The same from text; `source` names it in messages. text NULL or "" gives all defaults. */
int ds_config_parse(const char *text, const char *source, const DsConfigField *schema, void *out, char *err,
                    size_t errlen);
/* Apply "a.b=value" (value as JSON, or a bare string) on top of a filled struct. Arrays of
 * objects are not reachable this way. */
int ds_config_set(const char *assignment, const DsConfigField *schema, void *out, char *err, size_t errlen);
/* The struct as pretty JSON (malloc'd; free it). */
char *ds_config_to_json(const DsConfigField *schema, const void *cfg);
/* Frees the arrays the reader allocated in cfg (pointers NULL, counts 0 after). */
void ds_config_free(const DsConfigField *schema, void *cfg);

#endif
