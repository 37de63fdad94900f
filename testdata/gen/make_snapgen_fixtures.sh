#!/usr/bin/env bash
# Regenerates the small synthetic snapshots (+ .truth.json and MANIFEST.tsv) in testdata/snapgen/ with snapgen.py.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
SNAPGEN="${SNAPGEN:-$here/../../../shared/snapgen/snapgen.py}"
PYTHON="${PYTHON:-python3}"
out="$repo/testdata/snapgen"
[ -f "$SNAPGEN" ] || { echo "snapgen.py not found: $SNAPGEN (set SNAPGEN=...)" >&2; exit 1; }
command -v zstd >/dev/null || { echo "zstd command not found" >&2; exit 1; }
export PYTHONHASHSEED=0

rm -rf "$out"
mkdir -p "$out"
manifest="$out/MANIFEST.tsv"
: >"$manifest"

small=(--seed 1 --layers 2 --width 256 --batch 2 --seq 64)

# gen NAME.EXT [snapgen args...]: writes $out/NAME.EXT and $out/NAME.truth.json.
gen() {
  local file="$1"; shift
  "$PYTHON" "$SNAPGEN" "$@" -o "$out/$file" 2>/dev/null
  if [[ "$file" == *.gz ]]; then
    # gzip.open stores the current time in the header (bytes 4..7, not covered by the CRC): zero it.
    printf '\0\0\0\0' | dd of="$out/$file" bs=1 seek=4 count=4 conv=notrunc status=none
  fi
  local base="${file%.gz}"; base="${base%.pickle}"
  printf '%s\t%s\t%s\n' "$file" "$base.truth.json" "$*" >>"$manifest"
}

gen train.pickle            "${small[@]}" --scenario train --steps 5
gen leak.pickle             "${small[@]}" --scenario leak --steps 12 --snapshot-at 4 --snapshot-at 10
for s in 4 10; do
  printf '%s\t%s\t%s\n' "leak.step$s.pickle" "leak.step$s.truth.json" \
    "${small[*]} --scenario leak --steps 12 --snapshot-at 4 --snapshot-at 10 (snapshot after step $s)" >>"$manifest"
done
gen frag.pickle             --seed 1 --scenario frag --steps 30 --layers 4 --width 256 --batch 2 --seq 64
gen frag_after_oom.pickle   --seed 1 --scenario frag --steps 30 --layers 4 --width 256 --batch 2 --seq 64 --free-after-oom
gen capacity.pickle         "${small[@]}" --scenario capacity --steps 3 --capacity-gib 0.05
gen legacy.pickle           "${small[@]}" --scenario train --steps 5 --legacy
gen list.pickle             "${small[@]}" --scenario train --steps 5 --form list
for p in 0 2 5; do
  gen "proto$p.pickle"      "${small[@]}" --scenario train --steps 3 --protocol "$p"
done
gen devices2.pickle         "${small[@]}" --scenario train --steps 3 --devices 2
# Big enough that the fast path splits it across two threads.
gen split.pickle            --seed 1 --layers 4 --width 256 --batch 2 --seq 64 --scenario train --steps 25 --devices 2
gen streams2.pickle         "${small[@]}" --scenario train --steps 5 --streams 2
gen expandable.pickle       "${small[@]}" --scenario train --steps 5 --expandable
gen expandable_leak.pickle  "${small[@]}" --scenario leak --steps 12 --expandable
# The OOM of a job on expandable segments (the message's "Tried to allocate" differs).
gen capacity_expandable.pickle "${small[@]}" --scenario capacity --steps 3 --capacity-gib 0.05 --expandable
# Iterations: growth per step with four steps; a leak found in three.
gen train4.pickle           "${small[@]}" --scenario train --steps 4
gen leak3.pickle            "${small[@]}" --scenario leak --steps 3
gen cpp.pickle              "${small[@]}" --scenario train --steps 3 --cpp-frames --extra-frames 3
gen ring.pickle             "${small[@]}" --scenario leak --steps 12 --max-entries 200
# A ring buffer that dropped the peak: the highest state is the one the window opened with.
gen ring_start.pickle       "${small[@]}" --scenario train --steps 6 --max-entries 30
gen forward.pickle          --seed 1 --layers 24 --width 256 --batch 2 --seq 64 --scenario forward
gen inference.pickle        --seed 1 --layers 12 --width 256 --batch 2 --seq 64 --scenario inference --steps 6
# A trace recorded without stacks (context=None): the frames stripped afterwards.
gen nostacks.pickle         "${small[@]}" --scenario train --steps 12
"$PYTHON" "$repo/tests/bench/strip_frames.py" "$out/nostacks.pickle" "$out/nostacks.pickle"
sed -i 's/^\(nostacks\.pickle\t.*\)$/\1 (then: tests\/bench\/strip_frames.py)/' "$manifest"
gen train_gz.pickle.gz      "${small[@]}" --scenario train --steps 5
gen train_zst.pickle        "${small[@]}" --scenario train --steps 5
zstd -q -f --rm "$out/train_zst.pickle"
sed -i 's/^train_zst\.pickle\t\(.*\)$/train_zst.pickle.zst\t\1 (then: zstd -q --rm)/' "$manifest"
# The anti-patterns and churn findings (issue 36): empty_cache() each step on two
# devices, one layer too large, a module built anew each step.
gen empty_cache.pickle      --seed 1 --layers 2 --width 512 --batch 2 --seq 128 --scenario train --steps 5 \
                            --empty-cache-each-step --devices 2
gen big_layer.pickle        "${small[@]}" --scenario train --steps 5 --big-layer-mib 64
gen model_per_step.pickle   "${small[@]}" --scenario train --steps 6 --model-per-step 8
# A cache flush-and-retry near capacity (not snapgen: written by hand, not in the manifest).
"$PYTHON" "$here/make_retry_fixture.py"

# Sanity: every manifest entry exists, truth beside it, sizes small.
total=0
while IFS=$'\t' read -r f t _; do
  [ -f "$out/$f" ] && [ -f "$out/$t" ] || { echo "missing $f or $t" >&2; exit 1; }
  sz=$(stat -c %s "$out/$f"); total=$((total + sz))
  [ "$sz" -le 260000 ] || { echo "$f is too large: $sz bytes" >&2; exit 1; }
done <"$manifest"
[ "$total" -le 2600000 ] || { echo "fixtures too large in total: $total bytes" >&2; exit 1; }
echo "wrote $(wc -l <"$manifest") snapshots ($total bytes) to $out"
