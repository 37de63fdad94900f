#!/usr/bin/env python3
# Every traced real snapshot in ../shared/realdata: memsnap's peaks (value and event, the window's
# opening as -1) equal an independent replay's (tests/oracle/exact_peaks.py) wherever that replay
# ends on the dumped layout, and memsnap's own replay says it ends on the dumped layout too.
import json
import os
import subprocess
import sys

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
    errors = compared = 0
    for path in files:
        run = subprocess.run([memsnap, "analyze", "--format", "json", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        name = os.path.basename(path)
        if run.returncode != 0:
            print("FAIL %s: exit %d: %s" % (name, run.returncode, run.stderr.strip()))
            errors += 1
            continue
        devices = {d["device"]: d for d in json.loads(run.stdout)["devices"]}
        for od in want[path]["devices"]:
            if not od["layout_equal"]:
                print("note %s device %d: the oracle's replay does not end on the dump" % (name, od["device"]))
                continue
            d = devices[od["device"]]
            got = (d["peak"]["allocated_bytes"], d["peak"]["event_index"], d["peak_reserved"]["bytes"],
                   d["peak_reserved"]["event_index"])
            exp = (od["allocated_bytes"], od["allocated_event_index"], od["reserved_bytes"],
                   od["reserved_event_index"])
            lay = d["trace"].get("layout") or {}
            ok = got == exp and lay.get("equal") is True
            print("%s %s device %d: %r%s" % ("ok  " if ok else "FAIL", name, od["device"], got,
                                             "" if ok else " want %r, layout %r" % (exp, lay)))
            errors += not ok
            compared += 1
    if compared == 0:
        print("FAIL: no traced device compared")
        return 1
    print("%d devices compared, %d errors" % (compared, errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
