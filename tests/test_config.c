/* tests/test_config.c — schema-checked JSON configs (datasets/config.h): defaults, every kind
 * of input error with the message naming the file and key, --set overrides, JSON round trip. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/config.h"
#include "tests/test.h"

typedef struct {
    int64_t steps;
    double lr;
    bool verbose;
    char name[16];
    struct {
        int64_t width;
        char act[8];
    } model;
} Cfg;

static const char *const ACTS[] = {"tanh", "relu", NULL};
static const DsConfigField MODEL[] = {
    {"width", DS_CFG_INT, offsetof(Cfg, model.width) - offsetof(Cfg, model), "32", 1, 1024},
    {"act", DS_CFG_STRING, offsetof(Cfg, model.act) - offsetof(Cfg, model), "tanh", 1, 0, .size = 8,
     .choices = ACTS},
    {0}};
static const DsConfigField SCHEMA[] = {
    {"steps", DS_CFG_INT, offsetof(Cfg, steps), "100", 1, 1e6},
    {"lr", DS_CFG_FLOAT, offsetof(Cfg, lr), "1e-3", 0, 1},
    {"verbose", DS_CFG_BOOL, offsetof(Cfg, verbose), "false", 1, 0},
    {"name", DS_CFG_STRING, offsetof(Cfg, name), "run", 1, 0, .size = 16},
    {"model", DS_CFG_OBJECT, offsetof(Cfg, model), .fields = MODEL},
    {0}};

static int parse(const char *text, Cfg *c, char *err) {
    memset(c, 0x5a, sizeof *c);
    return ds_config_parse(text, "cfg.json", SCHEMA, c, err, 512);
}

/* the message must contain every needle */
#define CHECK_ERR(err, ...)                                                                      \
    do {                                                                                         \
        const char *needles_[] = {__VA_ARGS__};                                                  \
        for (size_t k_ = 0; k_ < sizeof needles_ / sizeof *needles_; k_++)                       \
            CHECK_MSG(strstr(err, needles_[k_]), "message '%s' lacks '%s'", err, needles_[k_]); \
    } while (0)

TEST(config_defaults) {
    Cfg c;
    char err[512] = "";
    CHECK(parse(NULL, &c, err) == 0);
    CHECK(c.steps == 100 && c.lr == 1e-3 && !c.verbose && !strcmp(c.name, "run"));
    CHECK(c.model.width == 32 && !strcmp(c.model.act, "tanh"));
    /* absent keys take defaults, present ones win; an absent nested object is all defaults */
    CHECK(parse("{\"steps\": 7, \"model\": {\"act\": \"relu\"}}", &c, err) == 0);
    CHECK(c.steps == 7 && c.lr == 1e-3 && c.model.width == 32 && !strcmp(c.model.act, "relu"));
    CHECK(parse("{}", &c, err) == 0 && c.steps == 100);
}

TEST(config_unknown_key) {
    Cfg c;
    char err[512] = "";
    CHECK(parse("{\"stpes\": 7}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "unknown key 'stpes'", "steps"); /* lists the known keys */
    CHECK(parse("{\"model\": {\"widht\": 7}}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "'model.widht'");
    /* a key given twice is a mistake too: one of them would be silently ignored */
    CHECK(parse("{\"steps\": 7, \"steps\": 8}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "'steps'", "twice");
}

TEST(config_wrong_type) {
    Cfg c;
    char err[512] = "";
    CHECK(parse("{\"steps\": \"ten\"}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "'steps'", "integer", "\"ten\"");
    CHECK(parse("{\"steps\": 2.5}", &c, err) != 0);
    CHECK_ERR(err, "'steps'", "integer", "2.5");
    CHECK(parse("{\"lr\": true}", &c, err) != 0);
    CHECK_ERR(err, "'lr'", "number");
    CHECK(parse("{\"verbose\": 1}", &c, err) != 0);
    CHECK_ERR(err, "'verbose'", "true or false");
    CHECK(parse("{\"name\": 3}", &c, err) != 0);
    CHECK_ERR(err, "'name'", "string");
    CHECK(parse("{\"model\": 3}", &c, err) != 0);
    CHECK_ERR(err, "'model'", "object");
    CHECK(parse("[1, 2]", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "top level", "object");
    CHECK(parse("{\"model\": {\"act\": \"swish\"}}", &c, err) != 0);
    CHECK_ERR(err, "'model.act'", "\"tanh\"", "\"relu\"", "swish");
    CHECK(parse("{\"name\": \"a name much too long for it\"}", &c, err) != 0);
    CHECK_ERR(err, "'name'", "longer than 15");
}

TEST(config_out_of_range) {
    Cfg c;
    char err[512] = "";
    CHECK(parse("{\"steps\": 0}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json", "'steps'", "[1, 1e+06]", "got 0");
    CHECK(parse("{\"lr\": 1.5}", &c, err) != 0);
    CHECK_ERR(err, "'lr'", "1.5");
    CHECK(parse("{\"model\": {\"width\": 4096}}", &c, err) != 0);
    CHECK_ERR(err, "'model.width'", "4096");
    /* the bounds are inclusive */
    CHECK(parse("{\"steps\": 1, \"lr\": 1, \"model\": {\"width\": 1024}}", &c, err) == 0);
}

TEST(config_bad_json_line_col) {
    Cfg c;
    char err[512] = "";
    /* the missing comma is at line 3: the parser stops at the next key */
    CHECK(parse("{\n  \"steps\": 5\n  \"lr\": 0.1\n}\n", &c, err) != 0);
    CHECK_ERR(err, "cfg.json:3:3:", "invalid JSON");
    CHECK(parse("{\"steps\": 5,}", &c, err) != 0);
    CHECK_ERR(err, "cfg.json:1:");
    CHECK(parse("{\"steps\": 5} trailing", &c, err) != 0);
    CHECK_ERR(err, "cfg.json:1:", "invalid JSON");
    /* files: the path names the file; a missing file says so */
    char path[] = "/tmp/anima-cfg-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "{\n\"steps\": 5,\n\"lr\": 0.1,,\n}";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    CHECK(ds_config_load(path, SCHEMA, &c, err, sizeof err) != 0);
    char want[64];
    snprintf(want, sizeof want, "%s:3:", path);
    CHECK_ERR(err, want);
    unlink(path);
    CHECK(ds_config_load(path, SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, path, "cannot open");
}

/* a directory or an empty file given as a config is an error naming it, never {} (all
 * defaults): issue 17 */
TEST(config_load_refuses_directory_and_empty_file) {
    Cfg c;
    char err[512] = "", dir[] = "/tmp/anima-cfgdir-XXXXXX", path[128];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(ds_config_load(dir, SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, dir, "is a directory, not a JSON config");
    const char *texts[] = {"", "  \n\t\n"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/empty%d.json", dir, k);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(texts[k], f) >= 0 && fclose(f) == 0);
        err[0] = 0;
        CHECK(ds_config_load(path, SCHEMA, &c, err, sizeof err) != 0);
        CHECK_ERR(err, path, "empty file, not a JSON config");
        unlink(path);
    }
    /* "{}" written out is still all defaults */
    snprintf(path, sizeof path, "%s/braces.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("{\"steps\": 3}\n", f) >= 0 && fclose(f) == 0);
    CHECK_MSG(ds_config_load(path, SCHEMA, &c, err, sizeof err) == 0, "%s", err);
    CHECK(c.steps == 3);
    unlink(path);
    rmdir(dir);
}

TEST(config_set_override) {
    Cfg c;
    char err[512] = "";
    CHECK(parse("{\"steps\": 7}", &c, err) == 0);
    CHECK(ds_config_set("steps=9", SCHEMA, &c, err, sizeof err) == 0 && c.steps == 9);
    CHECK(ds_config_set("lr=2e-4", SCHEMA, &c, err, sizeof err) == 0 && c.lr == 2e-4);
    CHECK(ds_config_set("verbose=true", SCHEMA, &c, err, sizeof err) == 0 && c.verbose);
    CHECK(ds_config_set("model.act=relu", SCHEMA, &c, err, sizeof err) == 0 && !strcmp(c.model.act, "relu"));
    CHECK(ds_config_set("model.width=64", SCHEMA, &c, err, sizeof err) == 0 && c.model.width == 64);
    /* a bare value for a string key is the string, even when it reads as a number or bool */
    CHECK(ds_config_set("name=123", SCHEMA, &c, err, sizeof err) == 0 && !strcmp(c.name, "123"));
    CHECK(ds_config_set("name=\"quoted\"", SCHEMA, &c, err, sizeof err) == 0 && !strcmp(c.name, "quoted"));
    /* errors name the key */
    CHECK(ds_config_set("stepz=9", SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, "stepz");
    CHECK(ds_config_set("model.depth=9", SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, "model.depth");
    CHECK(ds_config_set("steps=0", SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, "'steps'", "got 0");
    CHECK(ds_config_set("steps", SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, "key.path=value");
    /* trailing junk after a number is not silently dropped */
    CHECK(ds_config_set("steps=12abc", SCHEMA, &c, err, sizeof err) != 0);
    CHECK_ERR(err, "'steps'", "integer");
    CHECK(c.steps == 9);
}

TEST(config_json_round_trip) {
    Cfg a, b;
    char err[512] = "";
    CHECK(parse("{\"steps\": 123, \"lr\": 0.1, \"verbose\": true, \"name\": \"x\\\"y\", "
                "\"model\": {\"width\": 5, \"act\": \"relu\"}}",
                &a, err) == 0);
    a.lr = 0.1 + 0.2; /* a double that needs all 17 digits */
    char *json = ds_config_to_json(SCHEMA, &a);
    CHECK(json != NULL);
    CHECK(parse(json, &b, err) == 0);
    CHECK(a.steps == b.steps && a.lr == b.lr && a.verbose == b.verbose && !strcmp(a.name, b.name));
    CHECK(a.model.width == b.model.width && !strcmp(a.model.act, b.model.act));
    char *json2 = ds_config_to_json(SCHEMA, &b);
    CHECK(!strcmp(json, json2));
    free(json);
    free(json2);
}

/* vec3 fields and arrays of objects (the scene schema of sim/scene.c is built from them) */
typedef struct {
    double position[3];
    int64_t id;
    double pivot[3];
    bool has_pivot;
} Item;

typedef struct {
    double gravity[3];
    Item *items;
    int nitems;
} Scene;

static const DsConfigField ITEM[] = {
    {"position", DS_CFG_VEC3, offsetof(Item, position), NULL, 1, 0},
    {"id", DS_CFG_INT, offsetof(Item, id), "0", 0, 9},
    {"pivot", DS_CFG_VEC3, offsetof(Item, pivot), DS_CFG_KEEP, -1, 1, .present = DS_CFG_PRESENT(Item, has_pivot)},
    {0}};
static const DsConfigField SCENE[] = {
    {"gravity", DS_CFG_VEC3, offsetof(Scene, gravity), "[0, -9.81, 0]", 1, 0},
    {"items", DS_CFG_ARRAY, offsetof(Scene, items), NULL, 1, 4, .fields = ITEM, .elem_size = sizeof(Item),
     .count_offset = offsetof(Scene, nitems)},
    {0}};

static int parse_scene(const char *text, Scene *s, char *err) {
    memset(s, 0, sizeof *s);
    return ds_config_parse(text, "scene.json", SCENE, s, err, 512);
}

TEST(config_arrays_and_vec3) {
    Scene s;
    char err[512] = "";
    CHECK_MSG(parse_scene("{\"items\": [{\"position\": [1, 2, 3]}, {\"position\": [4, 5, 6], \"id\": 7, "
                          "\"pivot\": [0.5, 0, -1]}]}",
                          &s, err) == 0,
              "%s", err);
    CHECK(s.gravity[0] == 0 && s.gravity[1] == -9.81 && s.gravity[2] == 0);
    CHECK(s.nitems == 2 && s.items[0].position[2] == 3 && s.items[0].id == 0 && !s.items[0].has_pivot);
    CHECK(s.items[1].position[0] == 4 && s.items[1].id == 7 && s.items[1].has_pivot && s.items[1].pivot[2] == -1);
    /* round trip through JSON */
    char *json = ds_config_to_json(SCENE, &s);
    Scene t;
    CHECK_MSG(parse_scene(json, &t, err) == 0, "%s", err);
    CHECK(t.nitems == 2 && t.items[1].id == 7 && t.items[1].position[1] == 5 && t.gravity[1] == -9.81);
    free(json);
    ds_config_free(SCENE, &t);
    CHECK(t.items == NULL && t.nitems == 0);
    ds_config_free(SCENE, &s);
    /* every error names the file and the key with the element's index */
    const struct {
        const char *json;
        const char *needles[3];
    } bad[] = {
        {"{\"items\": [{\"position\": [1, 2, 3]}, {\"position\": [1, 2]}]}",
         {"scene.json", "'items[1].position'", "3 numbers"}},
        {"{\"items\": [{\"position\": [1, \"a\", 3]}]}", {"scene.json", "'items[0].position'", "[1,\"a\",3]"}},
        {"{\"items\": [{\"position\": [1, 2, 3], \"colour\": 1}]}", {"scene.json", "unknown key 'items[0].colour'", "id"}},
        {"{\"items\": [{\"position\": [1, 2, 3]}, 5]}", {"scene.json", "'items[1]'", "an object"}},
        {"{\"items\": [{}]}", {"scene.json", "missing required key 'items[0].position'", "3 numbers"}},
        {"{\"items\": [{\"position\": [1, 2, 3], \"id\": 12}]}", {"scene.json", "'items[0].id'", "got 12"}},
        {"{\"items\": [{\"position\": [1, 2, 3], \"pivot\": [0, 2, 0]}]}", {"scene.json", "'items[0].pivot'", "[-1, 1]"}},
        {"{\"items\": []}", {"scene.json", "'items'", "1 to 4 objects"}},
        {"{\"items\": {}}", {"scene.json", "'items'", "objects"}},
        {"{}", {"scene.json", "missing required key 'items'", "objects"}},
        {"{\"gravity\": 1, \"items\": [{\"position\": [1, 2, 3]}]}", {"scene.json", "'gravity'", "3 numbers"}},
        /* an error after an array was read leaves nothing allocated (the leak checks would say) */
        {"{\"items\": [{\"position\": [1, 2, 3]}], \"gravity\": [1]}", {"scene.json", "'gravity'", "3 numbers"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_MSG(parse_scene(bad[i].json, &s, err) != 0, "case %zu parsed", i);
        for (int k = 0; k < 3; k++) CHECK_MSG(strstr(err, bad[i].needles[k]), "case %zu: '%s' lacks '%s'", i, err, bad[i].needles[k]);
        CHECK(s.items == NULL);
    }
    /* --set reaches vectors, not arrays of objects */
    CHECK(parse_scene("{\"items\": [{\"position\": [1, 2, 3]}]}", &s, err) == 0);
    CHECK(ds_config_set("gravity=[0, 0, -1]", SCENE, &s, err, sizeof err) == 0 && s.gravity[2] == -1);
    CHECK(ds_config_set("gravity=[0, 0]", SCENE, &s, err, sizeof err) != 0);
    CHECK_ERR(err, "'gravity'", "3 numbers");
    CHECK(ds_config_set("items=[]", SCENE, &s, err, sizeof err) != 0);
    CHECK_ERR(err, "items", "array of objects");
    ds_config_free(SCENE, &s);
}
