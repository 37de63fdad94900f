#!/usr/bin/env bash
# Benchmark of many files at once: `memsnap check -j 1` against `-j 2` on two fleets, in MB/s
# (not a ctest: timings on a shared machine are not a pass/fail signal).
#
#   tests/bench/fleet.sh [BUILD_DIR]     # default build/; RUNS=3, JOBS="1 2", FLEETS="big small"
#
#   big     20 files of about 190 MB (snapgen's train scenario, 30 layers, 2 devices, C++ and
#           35 extra frames, as tests/bench/run.sh makes them)
#   small   1,000 files of about 1 MB (4 distinct snapgen files of that kind)
#
# The distinct files are generated once under $MEMSNAP_BENCH_DIR/fleet (default
# /tmp/memsnap-bench), under `nice`; the fleet's files are hard links to them, so the figures are
# those of files in the page cache, as on a node that has just written them. Each timed run is
# `memsnap check --max-peak 1024TiB --no-oom -j N` over the whole fleet (every file loaded and
# analysed; the limit passes), not niced; before each one the script waits (up to WAIT seconds,
# default 120) for the 1-minute load average to fall below LOAD (default 1.0) and prints the
# load it ran at. Runs alternate between the N of JOBS; the table gives medians.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
build="${1:-$root/build}"
runs="${RUNS:-3}"
jobs="${JOBS:-1 2}"
fleets="${FLEETS:-big small}"
snapgen="${SNAPGEN:-$root/../shared/snapgen/snapgen.py}"
dir="${MEMSNAP_BENCH_DIR:-/tmp/memsnap-bench}/fleet"
mkdir -p "$dir"

gen() {  # gen NAME STEPS ENTRIES SEED: a snapgen file (7,000 entries a MB, about)
  local name=$1 steps=$2 entries=$3 seed=$4
  if [ ! -s "$dir/$name.pickle" ]; then
    echo "generating $dir/$name.pickle (nice)" >&2
    nice -n 19 python3 "$snapgen" --scenario train --steps "$steps" --layers 30 --devices 2 --max-entries "$entries" \
      --cpp-frames --extra-frames 35 --seed "$seed" -o "$dir/$name.tmp.pickle" >/dev/null
    mv "$dir/$name.tmp.pickle" "$dir/$name.pickle"
    rm -f "$dir/$name.tmp.truth.json"
  fi
}
link_fleet() {  # link_fleet NAME COUNT SOURCE...: COUNT hard links named NAME/rankNNNN.pickle
  local name=$1 count=$2
  shift 2
  local sources=("$@")
  if [ ! -e "$dir/$name/rank$(printf %04d $((count - 1))).pickle" ]; then
    rm -rf "$dir/$name"
    mkdir -p "$dir/$name"
    for i in $(seq 0 $((count - 1))); do
      ln "${sources[$((i % ${#sources[@]}))]}" "$dir/$name/rank$(printf %04d "$i").pickle"
    done
  fi
}
for f in $fleets; do
  case $f in
    big) gen big190 1460 1190000 1 && link_fleet big 20 "$dir/big190.pickle" ;;
    small) for s in 0 1 2 3; do gen "small$s" 50 3000 $((s + 10)); done
      link_fleet small 1000 "$dir"/small{0,1,2,3}.pickle ;;
  esac
done

python3 - "$build/memsnap" "$dir" "$runs" "${WAIT:-120}" "${LOAD:-1.0}" "$fleets" $jobs <<'PY'
import glob, os, statistics, subprocess, sys, time
memsnap, d, runs, wait, load_max = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
fleets, jobs = sys.argv[6].split(), [int(j) for j in sys.argv[7:]]
probe = ["python3", "-c", "import resource,subprocess,sys;p=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,file=sys.stderr);sys.exit(p.returncode)"]

def load():
    return float(open("/proc/loadavg").read().split()[0])

def settle():
    t0 = time.monotonic()
    while load() >= load_max and time.monotonic() - t0 < wait:
        time.sleep(5)
    return load()

print("machine: %s, %d cores" % (open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip(),
                                 os.cpu_count()))
print("| fleet | -j | wall (median of %d) | MB/s | CPU (user + sys) | MB per CPU second | peak RSS | load at start |" % runs)
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for fleet in fleets:
    files = sorted(glob.glob(os.path.join(d, fleet, "rank*.pickle")))
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    for f in files[:8]:  # the distinct inputs into the page cache
        open(f, "rb").read()
    res = {j: [] for j in jobs}
    for _ in range(runs):
        for j in jobs:
            l = settle()
            r0 = os.times()
            t0 = time.monotonic()
            p = subprocess.run(probe + [memsnap, "check", "--max-peak", "1024TiB", "--no-oom", "-q", "-j", str(j)] + files,
                               stderr=subprocess.PIPE)
            wall = time.monotonic() - t0
            r1 = os.times()
            if p.returncode != 0:
                sys.exit("check -j %d on %s: exit %d" % (j, fleet, p.returncode))
            rss = int(p.stderr.decode().strip().split("\n")[-1]) / 1024
            res[j].append((wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system),
                           rss, l))
    for j in jobs:
        wall = statistics.median(r[0] for r in res[j])
        cpu = statistics.median(r[1] for r in res[j])
        print("| %d x %.0f MB | %d | %.2f s | %.0f | %.2f s | %.0f | %.0f MiB | %.2f |" % (
            len(files), mb / len(files), j, wall, mb / wall, cpu, mb / cpu, max(r[2] for r in res[j]),
            max(r[3] for r in res[j])))
PY
