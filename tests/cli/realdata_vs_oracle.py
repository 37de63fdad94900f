#!/usr/bin/env python3
# Every real snapshot in ../shared/realdata: `memsnap analyze --format json` equals the Python oracle exactly.
import json
import os
import subprocess
import sys

FIELDS = ["reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "inactive_bytes",
          "segments", "blocks", "largest_free_block_bytes"]
EXTRA = ["pending_free_bytes", "internal_free_bytes"]
SKIP = 77  # ctest SKIP_RETURN_CODE


def main():
    memsnap, oracle, realdata = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.isdir(realdata):
        print("SKIPPED: %s is absent" % realdata)
        return SKIP
    files = sorted(os.path.join(realdata, f) for f in os.listdir(realdata)
                   if f.endswith((".pickle", ".pkl", ".json")))
    want = json.loads(subprocess.run([sys.executable, oracle] + files, stdout=subprocess.PIPE,
                                     check=True, text=True).stdout)["files"]
    errors = dropped = 0
    for path in files:
        run = subprocess.run([memsnap, "analyze", "--format", "json", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        name = os.path.basename(path)
        if run.returncode != 0:
            print("FAIL %s: exit %d: %s" % (name, run.returncode, run.stderr.strip()))
            errors += 1
            continue
        got = json.loads(run.stdout)
        w = want[path]
        if got["input"]["form"] != w["form"] or got["input"]["pickle_protocol"] != w["pickle_protocol"]:
            print("FAIL %s: input %s vs oracle %s/%s" % (name, got["input"], w["form"], w["pickle_protocol"]))
            errors += 1
        gd = {d["device"]: d for d in got["devices"]}
        for wd in w["devices"]:
            d = gd.get(wd["device"])
            if d is None:
                print("FAIL %s: device %d missing" % (name, wd["device"]))
                errors += 1
                continue
            for k in FIELDS + EXTRA:
                if d["totals"][k] != wd[k]:
                    print("FAIL %s device %d: %s = %s, oracle %s" % (name, wd["device"], k, d["totals"][k], wd[k]))
                    errors += 1
            tr = d["trace"]
            if tr["events_dropped_evidence"] != wd["events_dropped_evidence"] or \
                    tr["events_dropped"] != (wd["events_dropped_evidence"] is not None):
                print("FAIL %s device %d: trace.events_dropped_evidence = %s, oracle %s"
                      % (name, wd["device"], tr["events_dropped_evidence"], wd["events_dropped_evidence"]))
                errors += 1
            dropped += tr["events_dropped"]
            for k, ok in (("entries", "trace_entries"), ("first_time_us", "first_time_us"),
                          ("last_time_us", "last_time_us")):
                if tr[k] != wd[ok]:
                    print("FAIL %s device %d: trace.%s = %s, oracle %s" % (name, wd["device"], k, tr[k], wd[ok]))
                    errors += 1
        if len(gd) != len(w["devices"]):
            print("FAIL %s: %d devices, oracle %d" % (name, len(gd), len(w["devices"])))
            errors += 1
    print("%d real snapshots compared (%d devices with dropped events), %d mismatches" % (len(files), dropped, errors))
    return 1 if errors or not files else 0


if __name__ == "__main__":
    sys.exit(main())
