#!/usr/bin/env bash
# tests/examples.sh — anima used from one's own program, against the tree `make test` installed
# into $BUILD/install-test and through pkg-config only (no path into the repository but the
# examples' sources, the committed checkpoint and a config): every installed header compiles on its own;
# examples/train_step.c holds README.md's "A training step" verbatim, links statically against
# libanima.a and fits; examples/skin_mesh.c links against libanima.so and skins a mesh with the
# pretrained PhysSkin checkpoint; examples/rig_from_video.c runs the video-to-rig chain on a tiny
# benchmark; the shared library resolves its dependencies and exports the
# public API; the installed program runs. Lines like the unit suite's, then "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
CC=${CC:-cc}
repo=$(pwd)
prefix=$repo/$build/install-test
lib=$prefix/lib
export PKG_CONFIG_PATH=$lib/pkgconfig
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
tmp=$(mktemp -d /tmp/anima-examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
t0=0
begin() { t0=$(date +%s%N); }
ok() { printf 'ok   %-40s %6d ms\n' "$1" "$(( ($(date +%s%N) - t0) / 1000000 ))"; passed=$((passed + 1)); }
fail() { local name=$1; shift; printf 'FAIL %-40s (tests/examples.sh)\n' "$name"; printf '    %s\n' "$@"; failed=$((failed + 1)); }

if [ ! -f "$lib/pkgconfig/anima.pc" ] || ! pkg-config --exists anima; then
  fail install_tree "no anima.pc under $lib/pkgconfig: \`make test\` installs it there before this suite"
  echo "$passed passed, $failed failed"; exit 1
fi
cflags=$(pkg-config --cflags anima)

# the flags name the installed tree, never the repository
begin
bad=""
for f in $cflags; do
  case $f in
    -I"$prefix"/*) ;;
    -I.|-I[!/]*|-I"$repo"|-I"$repo"/*) bad="$bad $f" ;;
  esac
done
case " $cflags " in *" -I$prefix/include/anima "*) ;; *) bad="$bad (no -I$prefix/include/anima)" ;; esac
if [ -z "$bad" ]; then ok pkgconfig_names_installed_tree; else fail pkgconfig_names_installed_tree "cflags: $cflags" "bad:$bad"; fi

# each public header alone, strict C11 (no _GNU_SOURCE), as a user's first line
begin
n=0 errs=""
while IFS= read -r h; do
  rel=${h#"$prefix/include/anima/"}
  printf '#include "%s"\n' "$rel" > "$tmp/h.c"
  # shellcheck disable=SC2086
  if ! out=$($CC -std=c11 -Wall -Wextra -Werror $cflags -c "$tmp/h.c" -o "$tmp/h.o" 2>&1); then
    errs="$errs$rel: $(printf '%s' "$out" | head -3)"$'\n'
  fi
  n=$((n + 1))
done < <(find "$prefix/include/anima" -name '*.h' | sort)
if [ "$n" -ge 30 ] && [ -z "$errs" ]; then ok "headers_compile_alone ($n)"
else fail headers_compile_alone "$n headers installed" "$errs"; fi

# README.md's training step is examples/train_step.c's body: its #include lines appear in the
# example, the rest equals the lines between the example's markers (indented by 4 in main)
begin
block=$(awk '/^## A training step/ {s = 1; next} s && /^## / {exit} s == 1 && /^```c/ {s = 2; next} s == 2 && /^```/ {exit} s == 2' README.md)
marked=$(sed -n '/README.md "A training step" begins/,/README.md "A training step" ends/p' examples/train_step.c | sed '1d;$d' | sed 's/^    //')
body=$(printf '%s\n' "$block" | grep -v '^#include' | sed '/./,$!d')
missing=$(printf '%s\n' "$block" | grep '^#include' | while IFS= read -r l; do grep -qxF "$l" examples/train_step.c || echo "$l"; done)
if [ -z "$block" ]; then fail readme_training_step_is_example "no \`\`\`c block under \"## A training step\" in README.md"
elif [ "$body" != "$marked" ] || [ -n "$missing" ]; then
  fail readme_training_step_is_example "README.md's block and examples/train_step.c differ (update both):" \
    "$(diff <(printf '%s\n' "$body") <(printf '%s\n' "$marked"))" "$missing"
else ok readme_training_step_is_example; fi

# statically against libanima.a: its path, then everything anima.pc lists for a static link
begin
# shellcheck disable=SC2046
if ! out=$($CC -std=c11 -Wall -Wextra -Werror examples/train_step.c $cflags -o "$tmp/train_step" \
             "$lib/libanima.a" -Wl,--as-needed $(pkg-config --libs --static anima) 2>&1); then
  fail train_step_static "build failed:" "$out"
elif readelf -d "$tmp/train_step" | grep -q 'libanima\.so'; then
  fail train_step_static "linked against libanima.so, not libanima.a"
elif ! out=$("$tmp/train_step" 2>&1); then
  fail train_step_static "exit $?:" "$(printf '%s\n' "$out" | tail -5)"
else
  lines=$(printf '%s\n' "$out" | wc -l) first=$(printf '%s\n' "$out" | head -1) last=$(printf '%s\n' "$out" | tail -1)
  if [ "$lines" -eq 1000 ] && awk -v a="$first" -v b="$last" 'BEGIN {exit !(a > 1 && b < 1e-6 * a)}'; then
    ok train_step_static
  else fail train_step_static "expected 1000 losses falling by 1e6: $lines lines, first $first, last $last"; fi
fi

# against libanima.so with -lanima alone (the library names its own dependencies)
begin
if ! out=$($CC -std=c11 -Wall -Wextra -Werror examples/skin_mesh.c $cflags -o "$tmp/skin_mesh" \
             $(pkg-config --libs anima) -Wl,-rpath,"$lib" 2>&1); then
  fail skin_mesh_shared "build failed:" "$out"
elif ! readelf -d "$tmp/skin_mesh" | grep -q 'NEEDED.*\[libanima\.so\]'; then
  fail skin_mesh_shared "not linked against libanima.so"
elif ! out=$("$tmp/skin_mesh" models/physskin/pretrained/small.h5 - "$tmp/skin.h5" 2>&1); then
  fail skin_mesh_shared "exit $?:" "$(printf '%s\n' "$out" | tail -5)"
elif ! printf '%s\n' "$out" | grep -qE '^[0-9]+ vertices, [0-9]+ cubature points, [0-9]+ handles' || [ ! -s "$tmp/skin.h5" ]; then
  fail skin_mesh_shared "unexpected output (or no $tmp/skin.h5):" "$out"
else ok skin_mesh_shared; fi

# examples/rig_from_video.c: the video-to-rig chain through the public headers (gs4d fit on a
# tiny benchmark the installed program makes, its trajectories, a Skelebones rig, the PartMM rows)
begin
if ! out=$($CC -std=c11 -Wall -Wextra -Werror examples/rig_from_video.c $cflags -o "$tmp/rig_from_video" \
             $(pkg-config --libs anima) -Wl,-rpath,"$lib" 2>&1); then
  fail rig_from_video "build failed:" "$out"
elif ! out=$("$prefix/bin/anima" dataset motion --category humanoid --out "$tmp/bench" --frames 8 --views 6 --size 16 \
               --grid 32 --motion cmu_01_01 --no-progress 2>&1); then
  fail rig_from_video "anima dataset motion failed:" "$(printf '%s\n' "$out" | tail -5)"
elif ! mkdir -p "$tmp/rfv" || ! out=$("$tmp/rig_from_video" "$tmp/bench" "$tmp/rfv" configs/gs4d-demo.json 300 2>&1); then
  fail rig_from_video "exit $?:" "$(printf '%s\n' "$out" | tail -5)"
elif ! printf '%s\n' "$out" | grep -qE '^gs4d: held-out PSNR [0-9.]+ dB' || ! printf '%s\n' "$out" | grep -qE '^skelebones: [0-9]+ bones' ||
     ! printf '%s\n' "$out" | grep -qE '^partmm +[0-9.]+ +[0-9.]+$' || ! printf '%s\n' "$out" | grep -qE '^lbs +[0-9.]+ ' ||
     [ ! -s "$tmp/rfv/rig.h5" ] || [ ! -s "$tmp/rfv/trajectories.h5" ]; then
  fail rig_from_video "unexpected output (or no rig.h5 / trajectories.h5):" "$out"
else ok rig_from_video; fi

# the shared library finds all it needs and exports each layer's API
begin
missing=$(ldd "$lib/libanima.so" | grep 'not found')
syms=$(nm -D --defined-only "$lib/libanima.so" | awk '{print $3}')
absent=""
for s in tensor_matmul tensor_scope_begin ag_backward nn_linear_forward optim_init ds_mesh_read \
         ps_skinner_load gs_render sim_object_step sim_world_step; do
  printf '%s\n' "$syms" | grep -qxF "$s" || absent="$absent $s"
done
if [ -z "$missing" ] && [ -z "$absent" ]; then ok shared_library_exports
else fail shared_library_exports "ldd: $missing" "not exported:$absent"; fi

# the installed program
begin
if out=$("$prefix/bin/anima" --help 2>&1) && printf '%s\n' "$out" | grep -q '^usage: anima'; then ok installed_program_runs
else fail installed_program_runs "$out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
