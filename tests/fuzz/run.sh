#!/usr/bin/env bash
# tests/fuzz/run.sh [seconds] [reader...] — runs each reader's libFuzzer harness (built by
# `make fuzz`) for `seconds` (default 600), one at a time, starting from the committed seed corpus
# tests/fuzz/corpus/<reader>/. New inputs go to $BUILD/fuzz/work/<reader>/ (not committed);
# a crash leaves $BUILD/fuzz/crash-* and fails the script. Prints one result line per reader.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
secs=${1:-600}
shift || true
readers=("$@")
if [ ${#readers[@]} -eq 0 ]; then # every harness there is
  for c in tests/fuzz/fuzz_*.c; do r=${c#tests/fuzz/fuzz_}; readers+=("${r%.c}"); done
fi
rc=0
for r in "${readers[@]}"; do
  bin=$BUILD/fuzz/fuzz_$r
  [ -x "$bin" ] || { echo "$r: $bin missing (run make fuzz BUILD=$BUILD)"; rc=1; continue; }
  work=$BUILD/fuzz/work/$r
  mkdir -p "$work"
  log=$BUILD/fuzz/$r.log
  LSAN_OPTIONS=suppressions=tests/fuzz/lsan.supp:print_suppressions=0 \
  "$bin" "$work" "tests/fuzz/corpus/$r" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$BUILD/fuzz/crash-$r-" -print_final_stats=1 >"$log" 2>&1
  st=$?
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  took=$(grep -E '^Done [0-9]+ runs in' "$log" | awk '{print $5}')
  if [ $st -eq 0 ]; then echo "$r: ${took:-?} s, ${execs:-?} execs, no crash"
  else echo "$r: FAILED (exit $st) after ${execs:-?} execs — see $log"; rc=1; fi
done
exit $rc
