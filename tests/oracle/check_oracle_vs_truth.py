#!/usr/bin/env python3
# Cross-checks snapshot_totals.py against the snapgen .truth.json files listed in testdata/snapgen/MANIFEST.tsv.
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPGEN_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "testdata", "snapgen"))
FIELDS = {  # truth per_device key -> oracle key
    "reserved": "reserved_bytes", "allocated": "allocated_bytes", "active": "active_bytes",
    "requested": "requested_bytes", "inactive": "inactive_bytes", "segments": "segments",
    "largest_free_block": "largest_free_block_bytes", "trace_entries": "trace_entries",
}


def main():
    with open(os.path.join(SNAPGEN_DIR, "MANIFEST.tsv")) as f:
        pairs = [line.rstrip("\n").split("\t")[:2] for line in f if line.strip()]
    paths = [os.path.join(SNAPGEN_DIR, snap) for snap, _ in pairs]
    out = subprocess.run([sys.executable, os.path.join(HERE, "snapshot_totals.py")] + paths,
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    result = json.loads(out)["files"]
    errors, notes = [], []
    for (snap, truth_name), path in zip(pairs, paths):
        with open(os.path.join(SNAPGEN_DIR, truth_name)) as f:
            truth = json.load(f)["per_device"]
        got = result[path]
        if len(got["devices"]) != len(truth):
            errors.append("%s: %d devices, truth has %d" % (snap, len(got["devices"]), len(truth)))
            continue
        for want, have in zip(truth, got["devices"]):
            for tkey, okey in FIELDS.items():
                if tkey not in want:
                    continue
                if tkey == "trace_entries" and got["form"] == "list":
                    # Known truth quirk: the list form carries no trace, truth counts the simulated one.
                    notes.append("%s device %d: trace_entries not compared (list form; truth says %s)"
                                 % (snap, have["device"], want[tkey]))
                    continue
                if want[tkey] != have[okey]:
                    errors.append("%s device %d: %s: oracle %s, truth %s"
                                  % (snap, have["device"], tkey, have[okey], want[tkey]))
    for n in notes:
        print("NOTE " + n)
    for e in errors:
        print("MISMATCH " + e)
    print("%d snapshots checked, %d mismatches" % (len(pairs), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
