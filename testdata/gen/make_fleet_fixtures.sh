#!/usr/bin/env bash
# Regenerates, with snapgen.py, the inputs of the tests that need more than one run:
#   testdata/fleet/  64 ranks (rankNN.pickle + .truth.json) for cli_fleet, the docs' `in FLEET`
#                    examples and tests/cluster/slurm.sh (tests/cli/fleet_gen.py says how each is made);
#   testdata/diff/   one model trained in two processes, at batch 2 and 4 (cli_diff).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export SNAPGEN="${SNAPGEN:-$here/../../../shared/snapgen/snapgen.py}"
PYTHON="${PYTHON:-python3}"
[ -f "$SNAPGEN" ] || { echo "snapgen.py not found: $SNAPGEN (set SNAPGEN=...)" >&2; exit 1; }
export PYTHONHASHSEED=0

rm -rf "$repo/testdata/fleet" "$repo/testdata/diff"
mkdir -p "$repo/testdata/fleet" "$repo/testdata/diff"
"$PYTHON" "$repo/tests/cli/fleet_gen.py" --regenerate "$repo/testdata/fleet" 64
for b in 2 4; do
  "$PYTHON" "$SNAPGEN" --scenario train --seed 1 --steps 3 --batch "$b" \
    -o "$repo/testdata/diff/train_batch$b.pickle" 2>/dev/null
done
echo "wrote $(ls "$repo/testdata/fleet"/*.pickle | wc -l) ranks and $(ls "$repo/testdata/diff"/*.pickle | wc -l) runs"
