#!/usr/bin/env python3
# Every traced real snapshot in ../shared/realdata: memsnap's peaks (value and event, the window's
# opening as -1) equal an independent replay's (tests/oracle/exact_peaks.py) wherever that replay
# ends on the dumped layout, and memsnap's own replay says it ends on the dumped layout too.
import sys

from realdata_oracle import run_against_oracle


def main():
    compared = 0

    def compare_file(name, got, want):
        nonlocal compared
        errors = 0
        devices = {d["device"]: d for d in got["devices"]}
        for od in want["devices"]:
            if not od["layout_equal"]:
                print("note %s device %d: the oracle's replay does not end on the dump" % (name, od["device"]))
                continue
            d = devices[od["device"]]
            got_peaks = (d["peak"]["allocated_bytes"], d["peak"]["event_index"], d["peak_reserved"]["bytes"],
                         d["peak_reserved"]["event_index"])
            exp = (od["allocated_bytes"], od["allocated_event_index"], od["reserved_bytes"],
                   od["reserved_event_index"])
            lay = d["trace"].get("layout") or {}
            ok = got_peaks == exp and lay.get("equal") is True
            print("%s %s device %d: %r%s" % ("ok  " if ok else "FAIL", name, od["device"], got_peaks,
                                             "" if ok else " want %r, layout %r" % (exp, lay)))
            errors += not ok
            compared += 1
        return errors

    def summarize(files, errors):
        if compared == 0:
            print("FAIL: no traced device compared")
            return 1
        print("%d devices compared, %d errors" % (compared, errors))
        return 1 if errors else 0

    return run_against_oracle(compare_file, summarize)


if __name__ == "__main__":
    sys.exit(main())
