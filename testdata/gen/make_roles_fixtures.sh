#!/usr/bin/env bash
# Regenerates testdata/roles/: small snapgen training runs (seeds, streams, devices, C++ frames,
# the scenarios issue 54 names) whose truth files carry allocated_by_role at the dump and at
# the peak, for tests/cli/test_roles.py. Byte for byte reproducible (PYTHONHASHSEED=0).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
SNAPGEN="${SNAPGEN:-$here/../../../shared/snapgen/snapgen.py}"
PYTHON="${PYTHON:-python3}"
out="$repo/testdata/roles"
[ -f "$SNAPGEN" ] || { echo "snapgen.py not found: $SNAPGEN (set SNAPGEN=...)" >&2; exit 1; }
export PYTHONHASHSEED=0

rm -rf "$out"
mkdir -p "$out"
manifest="$out/MANIFEST.tsv"
: >"$manifest"

small=(--layers 2 --width 256 --batch 2 --seq 64)

gen() {
  local file="$1"; shift
  "$PYTHON" "$SNAPGEN" "$@" -o "$out/$file" 2>/dev/null
  printf '%s\t%s\t%s\n' "$file" "${file%.pickle}.truth.json" "$*" >>"$manifest"
}

gen train_s2.pickle          --seed 2 "${small[@]}" --scenario train --steps 4
gen train_s3_streams.pickle  --seed 3 "${small[@]}" --scenario train --steps 4 --streams 2
gen train_s4_devices.pickle  --seed 4 "${small[@]}" --scenario train --steps 3 --devices 2
gen train_s5_cpp.pickle      --seed 5 "${small[@]}" --scenario train --steps 3 --cpp-frames --extra-frames 2
gen leak_s2.pickle           --seed 2 "${small[@]}" --scenario leak --steps 6 --leak-keep 2
gen frag_s2.pickle           --seed 2 --layers 3 --width 256 --batch 2 --seq 64 --scenario frag --steps 12
gen frag_s3_streams.pickle   --seed 3 --layers 3 --width 256 --batch 2 --seq 64 --scenario frag --steps 10 --streams 2
gen big_layer_s2.pickle      --seed 2 "${small[@]}" --scenario train --steps 3 --big-layer-mib 48
gen model_per_step_s3.pickle --seed 3 "${small[@]}" --scenario train --steps 4 --model-per-step 6
gen empty_cache_s2.pickle    --seed 2 "${small[@]}" --scenario train --steps 4 --empty-cache-each-step
gen train_s6_4layers.pickle  --seed 6 --layers 4 --width 384 --batch 3 --seq 32 --scenario train --steps 3

# The roles snapgen never makes (KV cache in a private pool, NCCL, autocast's cache): written by
# hand, not in the manifest.
"$PYTHON" "$here/make_roles_named_fixtures.py"

total=0
while IFS=$'\t' read -r f t _; do
  [ -f "$out/$f" ] && [ -f "$out/$t" ] || { echo "missing $f or $t" >&2; exit 1; }
  total=$((total + $(stat -c %s "$out/$f")))
done <"$manifest"
[ "$total" -le 1500000 ] || { echo "fixtures too large in total: $total bytes" >&2; exit 1; }
echo "wrote $(wc -l <"$manifest") snapshots ($total bytes) to $out"
