# tests/gltf/blender_check.py — imports a .glb into an empty Blender scene (headless) and checks
# the counts Blender sees: vertices (all meshes), joints (armature bones) and animation frames
# (the most keyframes of any F-curve: joint channels or shape-key weights).
# usage: blender -b --python-exit-code 1 -P tests/gltf/blender_check.py -- FILE.glb N_VERTS N_JOINTS N_FRAMES
import sys
import warnings

import bpy
import numpy

# Debian's Blender 3.4 importer uses numpy.bool, an alias numpy 1.24 removed (AttributeError while
# importing any mesh without normals); restore the alias rather than skip the check
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if not hasattr(numpy, "bool"):
        numpy.bool = bool

args = sys.argv[sys.argv.index("--") + 1:]
path, want = args[0], tuple(int(a) for a in args[1:4])
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=path)
verts = sum(len(o.data.vertices) for o in bpy.data.objects if o.type == "MESH")
joints = sum(len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE")
frames = 0
for a in bpy.data.actions:
    curves = a.fcurves if hasattr(a, "fcurves") else [c for l in a.layers for s in l.strips for b in s.channelbags for c in b.fcurves]
    for c in curves:
        frames = max(frames, len(c.keyframe_points))
got = (verts, joints, frames)
print(f"blender {bpy.app.version_string}: {path}: {verts} vertices, {joints} joints, {frames} animation frames")
if got != want:
    print(f"blender_check: {path}: expected {want[0]} vertices, {want[1]} joints, {want[2]} frames; got {got}")
    sys.exit(1)
