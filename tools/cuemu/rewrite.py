#!/usr/bin/env python3
"""tools/cuemu/rewrite.py IN.cu OUT.cpp — the one source rewrite cuemu needs to compile a CUDA file
as host C++17 (docs/cuemu.md). Three constructs are not expressible with macros:

  EXPR<<<grid, block[, shm[, stream]]>>>(args)
      -> cuemu::Launch(__FILE__, __LINE__, grid, block[, shm[, stream]]).run(EXPR, args)
  extern __shared__ [__align__(n)] T name[];
      -> T *name = (T *)cuemu::dynamic_shared();
  __shared__ T a[N], b;            (inside kernels and device functions)
      -> per declarator, storage in the block's shared arena: a function-local static slot
         (one per declaration and template instantiation) hands out the block's copy,
         re-poisoned for every block.

Everything else (comments, strings, line structure) is kept: newlines are preserved so that with
the leading #line directive compiler errors and __FILE__/__LINE__ name the .cu file's lines."""
import re
import sys


def code_mask(src):
    """True for characters of code, False inside comments, string and character literals."""
    mask = [True] * len(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            if src[k] != "\n":
                mask[k] = False
        i = j
    return mask


def fail(path, src, pos, msg):
    line = src.count("\n", 0, pos) + 1
    sys.exit(f"{path}:{line}: cuemu rewrite: {msg}")


def match_forward(src, mask, i, open_c, close_c):
    """Index just past the bracket matching src[i] == open_c (code characters only)."""
    depth = 0
    for j in range(i, len(src)):
        if not mask[j]:
            continue
        if src[j] == open_c:
            depth += 1
        elif src[j] == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def launch_expr_start(src, i):
    """Start of the kernel expression ending just before index i: an id-expression, possibly
    qualified (a::b) and with template arguments (k<T, S, 32>). Launches start statements, so
    a '>' before the <<< closes template arguments, never a comparison."""
    j = i
    while True:
        while j > 0 and src[j - 1].isspace():
            j -= 1
        if j > 0 and src[j - 1] == ">":
            depth, k = 0, j - 1
            while k >= 0:
                depth += {">": 1, "<": -1}.get(src[k], 0)
                if depth == 0:
                    break
                k -= 1
            j = k
            continue
        k = j
        while k > 0 and (src[k - 1].isalnum() or src[k - 1] in "_:"):
            k -= 1
        if k == j:
            return j
        j = k
        if not src[j:].startswith("::") and not (j > 0 and src[j - 1] == ">"):
            return j


def rewrite_launches(path, src):
    out = []
    pos = 0
    while True:
        mask = code_mask(src)
        i = next((m.start() for m in re.finditer(r"<<<", src[pos:]) if mask[pos + m.start()]), None)
        if i is None:
            break
        i += pos
        start = launch_expr_start(src, i)
        expr = src[start:i].strip()
        # the configuration: up to the >>> at parenthesis depth 0
        depth, j = 0, i + 3
        while j < len(src):
            if mask[j]:
                if src[j] in "([{":
                    depth += 1
                elif src[j] in ")]}":
                    depth -= 1
                elif depth == 0 and src.startswith(">>>", j):
                    break
            j += 1
        else:
            fail(path, src, i, "no >>> for this <<<")
        cfg = src[i + 3 : j]
        k = j + 3
        while k < len(src) and src[k].isspace():
            k += 1
        if k >= len(src) or src[k] != "(":
            fail(path, src, i, "a launch's >>> must be followed by its arguments")
        end = match_forward(src, mask, k, "(", ")")
        if end < 0:
            fail(path, src, k, "unbalanced launch arguments")
        args = src[k + 1 : end - 1]
        gap_newlines = src.count("\n", j + 3, k) + src.count("\n", start, i)
        call = f"cuemu::Launch(__FILE__, __LINE__, {cfg}).run({expr}"
        call += (", " + args if args.strip() else "") + ")" + "\n" * gap_newlines
        src = src[:start] + call + src[end:]
        pos = start + len(call)
    return src


ALIGN = re.compile(r"__align__\s*\(\s*[^)]*\)")


def rewrite_shared(path, src):
    mask = code_mask(src)
    out, pos, count = [], 0, 0
    for m in re.finditer(r"(extern\s+)?__shared__\b([^;]*);", src):
        if not mask[m.start()] or m.start() < pos:
            continue
        out.append(src[pos : m.start()])
        body = ALIGN.sub(" ", m.group(2)).strip()
        newlines = "\n" * m.group(0).count("\n")
        if m.group(1):
            d = re.fullmatch(r"(.*?)\b(\w+)\s*\[\s*\]", body, re.S)
            if not d:
                fail(path, src, m.start(), "extern __shared__ must declare one unsized array")
            ty, name = d.group(1).strip(), d.group(2)
            out.append(f"{ty} *{name} = ({ty} *)cuemu::dynamic_shared();{newlines}")
        else:
            parts, depth, cur = [], 0, ""
            for c in body:
                if c in "([<":
                    depth += 1
                elif c in ")]>":
                    depth -= 1
                if c == "," and depth == 0:
                    parts.append(cur)
                    cur = ""
                else:
                    cur += c
            parts.append(cur)
            d = re.fullmatch(r"(.*?)\b(\w+)\s*((?:\[[^\]]*\]\s*)*)", parts[0].strip(), re.S)
            if not d or not d.group(1).strip():
                fail(path, src, m.start(), "cannot parse this __shared__ declaration")
            ty = d.group(1).strip()
            decls = [(d.group(2), d.group(3))]
            for p in parts[1:]:
                e = re.fullmatch(r"\s*(\w+)\s*((?:\[[^\]]*\]\s*)*)", p, re.S)
                if not e:
                    fail(path, src, m.start(), "cannot parse this __shared__ declarator")
                decls.append((e.group(1), e.group(2)))
            text = []
            for name, dims in decls:
                count += 1
                t = f"cuemu_shared_t_{name}_{count}"
                s = f"cuemu_shared_slot_{name}_{count}"
                text.append(
                    f"typedef {ty} {t}{dims.strip()}; static cuemu::SharedSlot {s}; "
                    f"{t} &{name} = *({t} *){s}.get(sizeof({t}), alignof({t}));"
                )
            out.append(" ".join(text) + newlines)
        pos = m.end()
    out.append(src[pos:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: rewrite.py IN.cu OUT.cpp")
    path, dst = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        src = f.read()
    src = rewrite_shared(path, rewrite_launches(path, src))
    text = f'#line 1 "{path}"\n' + src
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    import os

    os.replace(tmp, dst)


if __name__ == "__main__":
    main()
