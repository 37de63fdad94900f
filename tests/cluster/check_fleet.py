#!/usr/bin/env python3
# A merged fleet against `analyze` of all its files at once and against each rank's truth.
#   check_fleet.py MERGED.json ALL.json TRUTH_DIR NAME
import json
import os
import sys

merged_path, all_path, truth_dir, name = sys.argv[1:5]
merged = json.load(open(merged_path))
whole = json.load(open(all_path))
failures = []


def check(what, cond, detail=""):
    if not cond:
        failures.append("%s: %s: %s" % (name, what, detail))


def base(path):
    return os.path.basename(path)


m, w = merged["fleet"], whole["fleet"]
check("complete", m.get("complete") is True, m.get("missing"))
check("64 rows", m["files"] == 64, m["files"])
# rows are named by the path each shard gave; compare them by file name
strip = lambda rows: sorted((dict(r, file=base(r["file"])) for r in rows), key=lambda r: r["file"])
check("rows == analyze of all", strip(m["rows"]) == strip(w["rows"]))
for key in ("devices", "totals", "median_peak_allocated_bytes", "histograms"):
    check(key + " == analyze of all", m[key] == w[key], (m[key], w[key]))
truths = 0
for r in m["rows"]:
    t = json.load(open(os.path.join(truth_dir, base(r["file"])[: -len(".pickle")] + ".truth.json")))
    truths += 1
    check(base(r["file"]) + " reserved", r["reserved_bytes"] == sum(d["reserved"] for d in t["per_device"]))
    check(base(r["file"]) + " allocated", r["allocated_bytes"] == sum(d["allocated"] for d in t["per_device"]))
check("every rank against its truth", truths == 64, truths)
check("the planted outlier", [base(r["file"]) for r in m["rows"] if r["outlier"]] == ["rank13.pickle"])
docs = sorted(json.dumps(dict(f, file=base(f["file"])), sort_keys=True) for f in merged["files"])
check("documents == analyze of all", docs == sorted(json.dumps(dict(f, file=base(f["file"])), sort_keys=True)
                                                    for f in whole["files"]))
for f in failures:
    print("FAIL " + f)
print("%s: %d passed, %d failed" % (name, 64 + 6 - len(failures), len(failures)))
sys.exit(1 if failures else 0)
