#!/usr/bin/env bash
# Benchmark of many files at once: memsnap analyze over a generated fleet with -j 1 against -j 2
# (not a ctest: timings on a shared machine are not a pass/fail signal).
#
#   tests/bench/fleet.sh [BUILD_DIR]        # default build/; COUNT=64 RUNS=3 JOBS="1 2" to change
#
# Generates 4 distinct train-scenario snapshots with ../shared/snapgen (1000 steps, 16 layers, 10
# extra frames: about 8 MB and a full 100,000-event trace each, so that analysing one takes a
# measurable time) and copies them to COUNT files, once, under $MEMSNAP_BENCH_DIR/fleet-COUNT
# (default /tmp/memsnap-bench); then runs `memsnap analyze --format json -j N` for each N in JOBS
# alternately, RUNS times, and prints the median wall time, the CPU time (user + sys) and the
# speedup over the first N, and whether every N printed the same bytes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
build="${1:-$root/build}"
count="${COUNT:-64}"
runs="${RUNS:-3}"
jobs="${JOBS:-1 2}"
snapgen="${SNAPGEN:-$root/../shared/snapgen/snapgen.py}"
dir="${MEMSNAP_BENCH_DIR:-/tmp/memsnap-bench}/fleet-$count"
if [ ! -s "$dir/rank$(printf %02d $((count - 1))).pickle" ]; then
  mkdir -p "$dir"
  echo "generating $count files in $dir" >&2
  for s in 0 1 2 3; do
    python3 "$snapgen" --scenario train --steps 1000 --layers 16 --width 256 --batch 1 --seq 16 \
      --extra-frames 10 --seed $((s + 1)) -o "$dir/seed$s.pickle" 2>/dev/null
  done
  for i in $(seq 0 $((count - 1))); do cp "$dir/seed$((i % 4)).pickle" "$dir/rank$(printf %02d "$i").pickle"; done
fi
bytes=$(cat "$dir"/rank*.pickle | wc -c)
echo "$count files, $((bytes / 1000000)) MB in all ($dir)"
python3 - "$build/memsnap" "$dir" "$runs" $jobs <<'PY'
import glob, os, statistics, subprocess, sys, time
memsnap, d, runs, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(j) for j in sys.argv[4:]]
files = sorted(glob.glob(os.path.join(d, "rank*.pickle")))
wall = {j: [] for j in jobs}
cpu = {j: [] for j in jobs}
outs = {}
for _ in range(runs):
    for j in jobs:
        t0 = time.monotonic()
        r0 = os.times()
        p = subprocess.run([memsnap, "analyze", "--format", "json", "-j", str(j)] + files,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        r1 = os.times()
        wall[j].append(time.monotonic() - t0)
        cpu[j].append((r1.children_user - r0.children_user) + (r1.children_system - r0.children_system))
        outs.setdefault(j, p.stdout)
base = statistics.median(wall[jobs[0]])
print("| -j | wall (median of %d) | CPU | speedup |" % runs)
print("|---:|---:|---:|---:|")
for j in jobs:
    w = statistics.median(wall[j])
    print("| %d | %.2f s | %.2f s | %.2fx |" % (j, w, statistics.median(cpu[j]), base / w))
same = len(set(outs.values())) == 1
print("outputs identical across -j: %s" % ("yes" if same else "NO"))
PY
