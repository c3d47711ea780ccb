#!/usr/bin/python3
"""tests/fuzz/seed_skinning.py — writes the seed corpus of the skinning-file harness
(tests/fuzz/corpus/skinning/): small valid files as anima writes them (HDF5 1.10 format,
Fletcher-32 on every dataset, fixed-length strings), with and without the optional parts, as a
Python producer writes them in the 1.10 format without checksums on the data, and two the reader
refuses by design: h5py's default (pre-1.10) format, and a variable-length format string.
Needs Debian's python3-h5py (/usr/bin/python3); run from the repository root."""
import os

import h5py
import numpy as np

OUT = "tests/fuzz/corpus/skinning"


def write(name, libver, checksum, frame, verts, grads, faces, m=2, vlen=False):
    rng = np.random.default_rng(len(name))
    c, v = 5, 4
    kw = dict(fletcher32=True, chunks=True) if checksum else {}
    with h5py.File(os.path.join(OUT, name), "w", libver=libver) as f:
        tag = "anima-skinning-1"
        f.attrs["format"] = tag if vlen else np.bytes_(tag)
        f.attrs["source"] = np.bytes_("seed")
        f.attrs["handles"] = np.int64(m)
        if frame:
            f.attrs["center"] = np.array([0.5, -1.0, 2.0])
            f.attrs["scale"] = 0.625
        f.create_dataset("cubature/points", data=rng.uniform(-1, 1, (c, 3)), **kw)
        f.create_dataset("cubature/volumes", data=rng.uniform(0.01, 0.1, c), **kw)
        f.create_dataset("cubature/weights", data=rng.uniform(0, 1, (c, m)), **kw)
        f.create_dataset("cubature/grads", data=rng.normal(size=(c, m, 3)), **kw)
        if verts:
            f.create_dataset("vertices/points", data=rng.uniform(-1, 1, (v, 3)), **kw)
            f.create_dataset("vertices/weights", data=rng.uniform(0, 1, (v, m)), **kw)
            if grads:
                f.create_dataset("vertices/grads", data=rng.normal(size=(v, m, 3)), **kw)
            if faces:
                f.create_dataset("mesh/faces", data=np.array([[0, 1, 2], [0, 2, 3]], np.int32), **kw)


os.makedirs(OUT, exist_ok=True)
write("anima_full.h5", ("v110", "latest"), True, True, True, True, True)
write("anima_bare.h5", ("v110", "latest"), True, False, False, False, False)
write("python_v110_nograds.h5", ("v110", "latest"), False, False, True, False, True, m=3)
write("refused_pre110_format.h5", "earliest", False, True, True, True, True)
write("refused_vlen_format.h5", ("v110", "latest"), True, False, True, True, False, vlen=True)
