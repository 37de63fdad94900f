#!/usr/bin/env python3
# Every real snapshot in ../shared/realdata: `memsnap analyze --format json` equals the Python oracle exactly.
import sys

from realdata_oracle import run_against_oracle

FIELDS = ["reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "inactive_bytes",
          "segments", "blocks", "largest_free_block_bytes"]
EXTRA = ["pending_free_bytes", "internal_free_bytes"]


def compare_trace(name, device, tr, wd):
    errors = 0
    if tr["events_dropped_evidence"] != wd["events_dropped_evidence"] or \
            tr["events_dropped"] != (wd["events_dropped_evidence"] is not None):
        print("FAIL %s device %d: trace.events_dropped_evidence = %s, oracle %s"
              % (name, device, tr["events_dropped_evidence"], wd["events_dropped_evidence"]))
        errors += 1
    for k, ok in (("entries", "trace_entries"), ("first_time_us", "first_time_us"),
                  ("last_time_us", "last_time_us")):
        if tr[k] != wd[ok]:
            print("FAIL %s device %d: trace.%s = %s, oracle %s" % (name, device, k, tr[k], wd[ok]))
            errors += 1
    return errors


def main():
    dropped = 0

    def compare_file(name, got, w):
        nonlocal dropped
        errors = 0
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
            errors += compare_trace(name, wd["device"], d["trace"], wd)
            dropped += d["trace"]["events_dropped"]
        if len(gd) != len(w["devices"]):
            print("FAIL %s: %d devices, oracle %d" % (name, len(gd), len(w["devices"])))
            errors += 1
        return errors

    def summarize(files, errors):
        print("%d real snapshots compared (%d devices with dropped events), %d mismatches"
              % (len(files), dropped, errors))
        return 1 if errors or not files else 0

    return run_against_oracle(compare_file, summarize)


if __name__ == "__main__":
    sys.exit(main())
