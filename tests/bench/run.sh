#!/usr/bin/env bash
# Benchmark of memsnap against Python's pickle.load and a bare opcode walk (not a ctest).
#
#   tests/bench/run.sh [BUILD_DIR]          # default build/; RUNS=5 SIZES="10 100 1000" to change
#   GEN_ONLY=1 tests/bench/run.sh           # only make (and cache) the inputs
#
# Generates snapgen inputs of about 10 MB, 100 MB and 1 GB (train scenario, 30 layers, 2
# devices, C++ frames, 35 extra frames), one of about 100 MB with one device and one of
# about 100 MB recorded without frames, once, under $MEMSNAP_BENCH_DIR (default
# /tmp/memsnap-bench, outside the repository), with a .zst of each; then runs memsnap
# analyze --format json (plain, .zst, stdin), Python's pickle.load and bench_opwalk
# alternately on each and prints a Markdown table:
# medians of RUNS runs of CPU time (user + sys), wall time, peak RssAnon (see measure.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
build="${1:-$root/build}"
dir="${MEMSNAP_BENCH_DIR:-/tmp/memsnap-bench}"
runs="${RUNS:-5}"
sizes="${SIZES:-10 100 1000}"
snapgen="${SNAPGEN:-$root/../shared/snapgen/snapgen.py}"
mkdir -p "$dir"
[ -n "${GEN_ONLY:-}" ] || cmake --build "$build" --target memsnap bench_opwalk -j2 >/dev/null

gen() {  # gen NAME STEPS ENTRIES [extra snapgen args]
  local name=$1 steps=$2 entries=$3
  shift 3
  if [ ! -s "$dir/$name.pickle" ]; then
    echo "generating $dir/$name.pickle" >&2
    python3 "$snapgen" --scenario train --steps "$steps" --layers 30 --devices 2 --max-entries "$entries" \
      "$@" -o "$dir/$name.pickle" >/dev/null
  fi
}
files=()
for mb in $sizes; do
  entries=$((mb * 8000))
  steps=$((mb * 8 + 100))
  gen "train${mb}mb" "$steps" "$entries" --cpp-frames --extra-frames 35
  files+=("$dir/train${mb}mb.pickle:${mb} MB, frames")
done
# One device: the whole trace is one event list, so the parse's second half starts inside
# it and the join appends (two devices split at the second one's list, which moves whole).
gen "one100mb" 1700 2000000 --cpp-frames --extra-frames 35 --devices 1
files+=("$dir/one100mb.pickle:100 MB, one device")
# Without frames: a trace recorded with context=None; events dominate the file.
gen "plain300mb" 2500 2500000 --cpp-frames --extra-frames 35
if [ ! -s "$dir/noframes.pickle" ]; then
  echo "generating $dir/noframes.pickle" >&2
  python3 "$here/strip_frames.py" "$dir/plain300mb.pickle" "$dir/noframes.pickle"
fi
files+=("$dir/noframes.pickle:no frames")
for f in "${files[@]}"; do
  p="${f%%:*}"
  [ -s "$p.zst" ] || zstd -q -3 -f "$p" -o "$p.zst"
done
[ -z "${GEN_ONLY:-}" ] || exit 0  # GEN_ONLY=1: make the inputs, measure nothing
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), RUNS=$runs"
python3 "$here/measure.py" "$build/memsnap" "$build/bench_opwalk" "$runs" "${files[@]}"
