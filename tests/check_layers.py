#!/usr/bin/env python3
"""tests/check_layers.py — the library's layering, checked from the sources and the objects.

Layers, lowest first; each may use itself and what its line lists:
    base      (libc, HDF5)
    tensor    base
    autograd  base tensor
    nn        base tensor autograd
    optim     base tensor autograd nn
    datasets  base tensor
    models/X  base tensor autograd nn optim datasets (and X itself, not another model, except
              the declared model dependencies of MODEL_USES)
    sim       base tensor datasets (a model reaches it only through skinning data: a scene that
              names a checkpoint gets its skinning from a hook the program installs)
    tests bench tools examples: everything

Seven checks, each one test in the closing "N passed, N failed" line (tests/run.sh counts it):
  1. include layers:  no #include "..." reaches a layer the including file's layer may not use;
  2. include cycles:  the #include graph among the files of one folder has no cycle;
  3. object layers:   no library object refers to a symbol defined in a layer it may not use;
  4. object cycles:   among the objects of one folder, "refers to a symbol defined in" has no
                      cycle (mesh_io.c calling a reader that calls back into mesh_io.c is one);
  5. prefixes:        every global symbol a library object defines carries its layer's prefix
                      (PREFIXES below; C++ names are read demangled, weak and template
                      instances of the C++ and CUDA libraries are not ours). Enforced once
                      PREFIX_CHECK is on (the issue-15 renames turn it on);
  6. no printing:     no library object refers to stderr, stdout or printf and its kin: the
                      library reports through base/log.h's sink and per-call callbacks, only
                      the programs print (QUIET_EXEMPT lists the abort paths that must).
  7. mutual pairs:    no two library objects refer to each other, whatever their folders (the
                      backend table's wider loop, core to table to kernels and back to the
                      core's accessors, is allowed by design; a pair calling each other
                      directly, as core.c and cpu_backend.c did through the device lookup,
                      is not).
A folder is a directory: tensor/, tensor/cpu/ and tensor/cuda/ are three (a backend's kernels
and the tensor core they run under depend on each other through the backend table by design).
Checks 3 and 4 read the objects under the build directory (argument 1, default build) and are
skipped, as passed, when it has none. Usage: python3 tests/check_layers.py [build-dir]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LIB_TOP = ["base", "tensor", "autograd", "nn", "optim", "datasets", "models", "sim"]
APP_TOP = ["tests", "bench", "tools", "examples"]
USES = {
    "base": set(),
    "tensor": {"base"},
    "autograd": {"base", "tensor"},
    "nn": {"base", "tensor", "autograd"},
    "optim": {"base", "tensor", "autograd", "nn"},
    "datasets": {"base", "tensor"},
    "models": {"base", "tensor", "autograd", "nn", "optim", "datasets"},
    "sim": {"base", "tensor", "datasets"},
}
# A model built on another model's public pieces, declared here (acyclic, one way): deformable
# Gaussians (issue 18) render through the Gaussian rasterizer's autograd op and train with its
# photometric loss, which live in models/gaussians.
MODEL_USES = {"models/gs4d": {"models/gaussians"},
              # PartMM animates a Skelebones rig (its FK, IK and rigid fits); its benchmark
              # (models/partmm/bench.h) renders the rows with the Gaussian rasterizer, scores them
              # with gs4d's SSIM and takes a gs4d run's Gaussians with their appearance
              "models/partmm": {"models/skelebones", "models/gaussians", "models/gs4d"},
              # PhysSkin trains on rigged shapes read from Skelebones rig.h5 files and, through
              # Skelebones' libassimp reader, from skinned models (models/physskin/data.c)
              "models/physskin": {"models/skelebones"}}
SOURCE_EXT = (".c", ".h", ".cu")
PREFIX_CHECK = True
# A backend's kernels inside tensor/ keep their own short prefix (cpu_, cu_): they are the
# backend table's entries, named after the backend, and never called from outside tensor/.
PREFIXES = {
    "base": ("base_",),
    "tensor": ("tensor_",),
    "tensor/cpu": ("tensor_", "cpu_"),
    "tensor/cuda": ("tensor_", "cu_"),
    "autograd": ("ag_",),
    "nn": ("nn_",),
    "optim": ("optim_",),
    "datasets": ("ds_",),
    "models/physskin": ("ps_",),
    "models/gaussians": ("gs_",),
    "models/skelebones": ("sb_",),
    "models/gs4d": ("gs4d_",),
    "models/partmm": ("pm_",),
    "sim": ("sim_",),
}
# The objects that may write to stderr/stdout themselves: the one-line messages of the abort
# paths (tensor_fail, an exhausted allocator), which must be seen whatever the sink, and
# tensor_print, whose job is printing.
QUIET_EXEMPT = {"base/alloc", "tensor/fail", "tensor/core"}
PRINTING = {"stderr", "stdout", "printf", "__printf_chk", "vprintf", "__vprintf_chk", "puts", "putchar", "perror"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(rel):
    """The layer of a repository-relative path: its top folder, models/<name> for a model."""
    parts = rel.split("/")
    if parts[0] == "models" and len(parts) > 2:
        return "models/" + parts[1]
    return parts[0]


def may_use(a, b):
    """Whether layer a may depend on layer b."""
    if a == b or a in APP_TOP:
        return True
    ta, tb = a.split("/")[0], b.split("/")[0]
    if ta == "models" and tb == "models":
        return b in MODEL_USES.get(a, set())  # one model does not reach into another undeclared
    return tb in USES.get(ta, set())


def sources():
    out = []
    for top in LIB_TOP + APP_TOP:
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(x for x in dirs if not x.startswith("."))
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    out.append(os.path.relpath(os.path.join(d, f), ROOT))
    return out


def includes(rel):
    """The repository files rel includes with quotes (resolved as the compiler does: next to
    the file first, then from the root, -I.)."""
    res = []
    with open(os.path.join(ROOT, rel), errors="replace") as fh:
        for line in fh:
            m = INCLUDE.match(line)
            if not m:
                continue
            for base in (os.path.dirname(rel), ""):
                cand = os.path.normpath(os.path.join(base, m.group(1)))
                if os.path.isfile(os.path.join(ROOT, cand)):
                    res.append(cand)
                    break
    return res


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return comps


def same_folder_graph(edges):
    g = {}
    for a, targets in edges.items():
        g.setdefault(a, set())
        for b in targets:
            if os.path.dirname(a) == os.path.dirname(b):
                g[a].add(b)
                g.setdefault(b, set())
    return g


def prefix_rule(key):
    """The prefixes allowed to the object key (its path under the build directory, no .o)."""
    folder = os.path.dirname(key)
    while folder and folder not in PREFIXES:
        folder = os.path.dirname(folder)  # datasets/mesh -> datasets
    return PREFIXES.get(folder)


def demangle(names):
    names = sorted(names)
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def objects(build):
    """{object key (path without .o, relative to build): (defined, undefined)} for the library's
    objects (the programs' objects under build/app are not the library)."""
    res = {}
    for top in LIB_TOP:
        for d, _, files in os.walk(os.path.join(build, top)):
            for f in files:
                if not f.endswith(".o"):
                    continue
                path = os.path.join(d, f)
                key = os.path.relpath(path, build)[:-2]
                if not any(os.path.isfile(os.path.join(ROOT, key + e)) for e in (".c", ".cu")):
                    continue  # left over from a source that moved or went away
                out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
                defined, undefined, strong = set(), set(), set()
                for line in out.splitlines():
                    p = line.split()
                    if len(p) == 2 and p[0] == "U":
                        undefined.add(p[1])
                    elif len(p) == 3 and p[1] in "TDBRCVWGS":
                        defined.add(p[2])
                        if p[1] in "TDBRCGS":
                            strong.add(p[2])
                res[key] = (defined, undefined, strong)
    return res


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    passed = failed = 0

    def report(name, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print("    " + p)
        else:
            passed += 1
            print(f"ok   {name}")

    inc = {s: includes(s) for s in sources()}
    report("include layers", [f"{a} includes {b}" for a in sorted(inc) for b in inc[a]
                              if not may_use(layer_of(a), layer_of(b))])
    report("include cycles", [" <-> ".join(c) for c in cycles(same_folder_graph(inc))])

    objs = objects(build)
    if not objs:
        print(f"(no objects under {build}: object checks pass vacuously)")
    owner = {}
    for k in sorted(objs):
        for s in objs[k][0]:
            owner.setdefault(s, k)
    deps, why = {}, {}
    for k, (_, undefined, _) in objs.items():
        deps[k] = set()
        for s in undefined:
            o = owner.get(s)
            if o and o != k:
                deps[k].add(o)
                why.setdefault((k, o), s)
    report("object layers", [f"{a}.o uses {why[(a, b)]} from {b}.o" for a in sorted(deps) for b in sorted(deps[a])
                             if not may_use(layer_of(a), layer_of(b))])
    report("object cycles", [" <-> ".join(c) + " (e.g. " + ", ".join(
        f"{a} uses {why[(a, b)]}" for a in c for b in sorted(deps[a]) if b in c) + ")"
        for c in cycles(same_folder_graph(deps))])

    bad = []
    for k in sorted(objs):
        rule = prefix_rule(k)
        if rule is None:
            continue
        for raw, name in sorted(demangle(objs[k][2]).items()):
            name = name.split("(")[0]
            if raw.startswith((".", "_")) and not raw.startswith("_Z") or "::" in name:
                continue  # compiler and runtime symbols, C++ library code
            if not name.lower().startswith(rule):  # PS_CONFIG_SCHEMA: a constant, in capitals
                bad.append(f"{k}.o: {name} (wants {' or '.join(rule)})")
    if PREFIX_CHECK:
        report("prefixes", bad)
    else:
        print(f"(prefixes: not enforced yet, {len(bad)} unprefixed)")

    report("no printing", [f"{k}.o uses {', '.join(sorted(objs[k][1] & PRINTING))}" for k in sorted(objs)
                           if k not in QUIET_EXEMPT and objs[k][1] & PRINTING])

    report("mutual pairs", [f"{a}.o uses {why[(a, b)]} from {b}.o and {b}.o uses {why[(b, a)]} from {a}.o"
                            for a in sorted(deps) for b in sorted(deps[a]) if a < b and a in deps.get(b, ())])

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
