#!/usr/bin/env bash
# The cluster recipes of docs/fleet.md, run verbatim: a Slurm job array on a real one-node
# Slurm (this machine as controller and compute node), then GNU parallel, each over a fleet of
# 64 generated ranks; the merged summary must equal `analyze` of all the files at once and each
# rank must equal its generator's truth.
#
#   tests/cluster/slurm.sh [BUILD/memsnap]
#
# Installs Debian's slurm-wlm, munge and parallel when they are missing; where they cannot be
# installed it prints one SKIP line and exits 77 (ctest's skip). Starts munged, slurmctld and
# slurmd from a configuration of its own under /tmp/memsnap-slurm (its own ports and munge
# socket), stops every daemon it started on exit, and can run again at once. Prints its duration.
set -euo pipefail
start=$(date +%s.%N)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
memsnap=$(realpath "${1:-$root/build/memsnap}")
base=/tmp/memsnap-slurm
say() { echo "slurm.sh: $*"; }
# Where a skip must not pass (MEMSNAP_NO_SKIP=1: .ci/run with ../shared beside the clone), it fails.
skip() {
  if [ "${MEMSNAP_NO_SKIP:-}" = 1 ]; then say "FAIL: not run, and a skip is a failure here (MEMSNAP_NO_SKIP=1): $*"; exit 1; fi
  say "SKIP: $*"; exit 77
}

[ -x "$memsnap" ] || { say "no memsnap binary at $memsnap"; exit 2; }

# --- packages -----------------------------------------------------------------------------------
need=()
for cmd in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge mungekey:munge parallel:parallel; do
  command -v "${cmd%%:*}" >/dev/null || need+=("${cmd##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  sudo=$(command -v sudo || true)
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends slurm-wlm munge parallel \
      >"$base.apt.log" 2>&1; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update >>"$base.apt.log" 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends slurm-wlm munge parallel \
      >>"$base.apt.log" 2>&1 || skip "cannot install slurm-wlm, munge and parallel (see $base.apt.log)"
  fi
fi
[ "$(id -u)" = 0 ] || skip "the daemons need root (slurmd runs jobs as their user)"

# --- a previous run's daemons, if one was killed before its cleanup -----------------------------
stop_daemons() {
  for name in slurmd slurmctld munged; do
    local pidfile="$base/run/$name.pid"
    if [ -f "$pidfile" ]; then
      local pid
      pid=$(cat "$pidfile")
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$pidfile"
    fi
  done
}
stop_daemons
rm -rf "$base"
mkdir -p "$base"/{run,state,spool,log,work}
chmod 700 "$base"
cleanup() {
  local rc=$?
  stop_daemons
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in "$base"/log/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  fi
  rm -rf "$base"
  say "took $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}") s"
  exit $rc
}
trap cleanup EXIT

# --- munge and Slurm, one node ------------------------------------------------------------------
host=$(hostname -s)
cpus=$(nproc)
mungekey --create --keyfile="$base/run/munge.key" >/dev/null 2>&1 || dd if=/dev/urandom of="$base/run/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$base/run/munge.key"
munged --force --socket="$base/run/munge.sock" --key-file="$base/run/munge.key" \
  --pid-file="$base/run/munged.pid" --log-file="$base/log/munged.log" --seed-file="$base/run/munge.seed"
cat >"$base/slurm.conf" <<EOF
ClusterName=memsnap
SlurmctldHost=$host
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$base/run/munge.sock
StateSaveLocation=$base/state
SlurmdSpoolDir=$base/spool
SlurmctldPidFile=$base/run/slurmctld.pid
SlurmdPidFile=$base/run/slurmd.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=60
InactiveLimit=0
MinJobAge=30
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=memsnap Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$base/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || { say "the node did not come up (state '$state')"; exit 1; }
say "Slurm up on $host ($cpus CPUs) after $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $start}") s"

# --- the fleet ----------------------------------------------------------------------------------
work="$base/work"
mkdir -p "$work/snaps"
python3 "$root/tests/cli/fleet_gen.py" "$work/snaps" 64
mkdir -p "$base/truth"
mv "$work"/snaps/*.truth.json "$base/truth/"
export PATH="$(dirname "$memsnap"):$PATH"
export HOME="$base/run"  # GNU parallel's will-cite notice lives there, not in the user's home
mkdir -p "$HOME/.parallel" && touch "$HOME/.parallel/will-cite"

# The recipes: the fenced block after each `<!-- recipe: NAME -->` line of docs/fleet.md.
recipe() {
  awk -v name="$1" '$0 == "<!-- recipe: " name " -->" {f = 1; next} f && /^```/ {if (g) exit; g = 1; next} g {print}' \
    "$root/docs/fleet.md"
}
for name in slurm-array slurm-submit parallel; do
  [ -n "$(recipe $name)" ] || { say "docs/fleet.md has no '$name' recipe"; exit 1; }
done
cd "$work"
memsnap analyze --format json snaps/*.pickle >"$base/all.json"

# Slurm: the array script as docs/fleet.md names it, submitted by the submit recipe, verbatim.
recipe slurm-array >memsnap-array.sh
say "sbatch the job array, then the merge"
bash -euo pipefail -c "$(recipe slurm-submit)"
for _ in $(seq 900); do
  queue=$(squeue -h -o '%i %r' 2>/dev/null || true)
  [ -z "$queue" ] && break
  case "$queue" in *DependencyNeverSatisfied*)
    say "a task of the array failed, so the merge never ran:"; tail -5 out/*.log; exit 1 ;;
  esac
  sleep 0.2
done
[ -z "$(squeue -h -o %i)" ] || { say "jobs still queued after 180 s: $(squeue -h)"; exit 1; }
[ -s fleet.json ] || { say "the merge job wrote no fleet.json"; cat out/*.log 2>/dev/null | tail -20; exit 1; }
ls out/shard*.jsonl | wc -l | grep -qx 16 || { say "want 16 shards, got: $(ls out)"; exit 1; }
python3 "$here/check_fleet.py" fleet.json "$base/all.json" "$base/truth" slurm

# GNU parallel, verbatim.
rm -rf out fleet.json
say "GNU parallel"
bash -euo pipefail -c "$(recipe parallel)"
python3 "$here/check_fleet.py" fleet.json "$base/all.json" "$base/truth" parallel
say "PASS"
