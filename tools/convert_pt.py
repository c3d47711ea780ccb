#!/usr/bin/python3
"""tools/convert_pt.py — convert between a PyTorch state_dict (.pt, torch.save) and anima's HDF5
checkpoint layout (optim/checkpoint.h: /params/<dotted.name>, attribute format on /).

    convert_pt.py IN.pt  OUT.h5   state_dict -> anima checkpoint (parameters only)
    convert_pt.py IN.h5  OUT.pt   anima checkpoint -> state_dict (torch.save of an OrderedDict)

The direction follows the extensions. Names are kept as they are (anima uses PyTorch's names and
layouts, e.g. Linear weight (out, in)), so `model.load_state_dict(torch.load(OUT), strict=True)`
works for a model built with the same structure. Only the parameters travel: the optimizer state
in /optim is anima's flat layout, which torch.optim's state_dict does not share.

Options:
    --key K        the state_dict is IN[K] (checkpoints that wrap it: {"model": ..., "optimizer": ...})
    --strip P      drop the prefix P from every name (e.g. "module." from DataParallel)
    --prefix P     put P in front of every name
    --f64          store in double precision (default: each tensor's own f32/f64; f16/bf16 -> f32)

Tensors anima cannot hold (integer buffers such as BatchNorm's num_batches_tracked) are skipped
with a note on stderr. Outputs are written to a temporary name and renamed, like anima's own
checkpoints. Uses Debian's python3-torch and python3-h5py; exit status 0, 1 on errors, 2 on
bad arguments.
"""
import collections
import os
import re
import sys

FORMAT_TAG = "anima-checkpoint-1"


def _natural_key(name):
    # "net.2.weight" before "net.10.weight": the order a model registers them
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _rename(name, strip, prefix):
    if strip and name.startswith(strip):
        name = name[len(strip):]
    return prefix + name


def _atomic(path, write):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def pt_to_h5(src, dst, key=None, strip="", prefix="", f64=False):
    import h5py
    import numpy as np
    import torch

    obj = torch.load(src, map_location="cpu")
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise ValueError("%s: no key %r at the top level" % (src, key))
        obj = obj[key]
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise ValueError("%s: expected a state_dict (a dict of tensors), got %s" % (src, type(obj).__name__))
    arrays = collections.OrderedDict()
    for name, t in obj.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError("%s: entry %r is a %s, not a tensor (a wrapped checkpoint? try --key)"
                             % (src, name, type(t).__name__))
        if not t.is_floating_point():
            print("convert_pt: skipping %s (%s: anima checkpoints hold floating-point tensors)" % (name, t.dtype),
                  file=sys.stderr)
            continue
        dt = torch.float64 if f64 or t.dtype == torch.float64 else torch.float32
        out = _rename(name, strip, prefix)
        if "/" in out:
            raise ValueError("%s: name %r contains '/', which HDF5 reads as a group" % (src, out))
        if out in arrays:
            raise ValueError("%s: two entries map to %r" % (src, out))
        arrays[out] = np.ascontiguousarray(t.detach().to(dt).numpy())

    def write(path):
        # as anima writes them: the 1.10 format (checksummed metadata; anima refuses older ones)
        # and Fletcher-32 on the data
        with h5py.File(path, "w", libver=("v110", "latest")) as f:
            f.attrs["format"] = np.bytes_(FORMAT_TAG)  # a fixed-length string
            g = f.create_group("params")
            for name, a in arrays.items():
                g.create_dataset(name, data=a, fletcher32=a.ndim > 0 and a.size > 0)

    _atomic(dst, write)
    return len(arrays)


def h5_to_pt(src, dst, strip="", prefix="", f64=False):
    import h5py
    import numpy as np
    import torch

    with h5py.File(src, "r") as f:
        fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt != FORMAT_TAG:
            raise ValueError("%s: format attribute is %r, expected %r" % (src, fmt, FORMAT_TAG))
        if "params" not in f:
            raise ValueError("%s: no /params group" % src)
        sd = collections.OrderedDict()
        for name in sorted(f["params"], key=_natural_key):
            a = f["params"][name][()]
            t = torch.from_numpy(np.ascontiguousarray(a))
            sd[_rename(name, strip, prefix)] = t.double() if f64 else t

    _atomic(dst, lambda path: torch.save(sd, path))
    return len(sd)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = {"key": None, "strip": "", "prefix": "", "f64": False}
    files = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a in ("--key", "--strip", "--prefix"):
            if i + 1 >= len(argv):
                print("convert_pt: %s needs a value" % a, file=sys.stderr)
                return 2
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a == "--f64":
            opts["f64"] = True
        elif a.startswith("-"):
            print("convert_pt: unknown option %r (see --help)" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    if len(files) != 2:
        print("usage: convert_pt.py IN.pt OUT.h5 | IN.h5 OUT.pt [--key K] [--strip P] [--prefix P] [--f64]",
              file=sys.stderr)
        return 2
    src, dst = files
    h5 = (".h5", ".hdf5")
    pt = (".pt", ".pth", ".bin")
    try:
        if src.endswith(pt) and dst.endswith(h5):
            n = pt_to_h5(src, dst, **opts)
        elif src.endswith(h5) and dst.endswith(pt):
            if opts["key"] is not None:
                print("convert_pt: --key applies to .pt inputs only", file=sys.stderr)
                return 2
            n = h5_to_pt(src, dst, opts["strip"], opts["prefix"], opts["f64"])
        else:
            print("convert_pt: convert .pt/.pth -> .h5 or .h5 -> .pt/.pth (got %s -> %s)" % (src, dst),
                  file=sys.stderr)
            return 2
    except Exception as e:  # unreadable pickles, HDF5 errors, bad contents: one line, exit 1
        msg = str(e)
        print("convert_pt: %s" % (msg if src in msg else "%s: %s" % (src, msg)), file=sys.stderr)
        return 1
    print("convert_pt: %s -> %s (%d tensors)" % (src, dst, n), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
