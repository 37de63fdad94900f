#!/usr/bin/env python3
# `memsnap export --format perfetto`: Chrome trace-event JSON that Python's json loads, in the
# trace-event schema (what ui.perfetto.dev and chrome://tracing read), whose allocated counter
# reaches exactly the peak `analyze --format json` reports, whose reserved counter reaches the
# reserved peak, with one instant per OOM and per segment event and one slice per iteration,
# in the snapshot's own clock.
import json
import os
import tempfile

from clitest import check as record
from clitest import expect_error, finish, run, snap


def check(name, cond, detail=""):
    record(name, cond, detail)
    return cond

PHASES = {"M", "C", "i", "X"}


def schema(name, doc):
    """The trace-event format's rules for the phases memsnap writes; returns the events."""
    if not check(name + ": an object with traceEvents", isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)):
        return []
    check(name + ": displayTimeUnit", doc.get("displayTimeUnit") in ("ms", "ns"), doc.get("displayTimeUnit"))
    check(name + ": otherData", isinstance(doc.get("otherData"), dict))
    for e in doc["traceEvents"]:
        ok = isinstance(e, dict) and isinstance(e.get("name"), str) and e.get("ph") in PHASES and \
            isinstance(e.get("pid"), int) and isinstance(e.get("args", {}), dict)
        if ok and e["ph"] != "M":
            ok = isinstance(e.get("ts"), (int, float))
        if ok and e["ph"] == "M":
            ok = e["name"] in ("process_name", "process_sort_index", "thread_name") and "args" in e
        if ok and e["ph"] == "C":
            ok = all(isinstance(v, (int, float)) for v in e["args"].values()) and e["args"]
        if ok and e["ph"] == "i":
            ok = e.get("s") in ("g", "p", "t") and isinstance(e.get("tid"), int)
        if ok and e["ph"] == "X":
            ok = isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0 and isinstance(e.get("tid"), int)
        if not check(name + ": event in the schema", ok, e):
            break
    return doc["traceEvents"]


def counters(events, pid, name):
    return [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["pid"] == pid and e["name"] == name]


def events_of(path, device):
    rc, out, err = run(["events", path, "--device", str(device), "--count", "10000000", "--format", "json"])
    return json.loads(out)["devices"][0]["events"]


with tempfile.TemporaryDirectory() as tmp:
    for fixture in ("frag.pickle", "leak.pickle", "devices2.pickle", "expandable.pickle", "ring.pickle",
                    "nostacks.pickle", "streams2.pickle", "forward.pickle", "train_gz.pickle.gz"):
        path, out = snap(fixture), os.path.join(tmp, fixture + ".json")
        rc, so, se = run(["export", "--format", "perfetto", path, "-o", out])
        check(fixture + ": exit", rc == 0 and so == "", "%d %r" % (rc, se))
        check(fixture + ": says what it wrote", se.startswith("wrote " + out + " (Chrome trace events"), se)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        events = schema(fixture, doc)
        rc, so, se = run(["analyze", "--format", "json", path])
        analysis = json.loads(so)
        for d in analysis["devices"]:
            if d["trace"]["entries"] == 0:
                continue
            dev = d["device"]
            name = "%s device %d" % (fixture, dev)
            allocated = counters(events, dev, "allocated")
            check(name + ": counter maximum == peak", max(allocated) == d["peak"]["allocated_bytes"],
                  (max(allocated), d["peak"]["allocated_bytes"]))
            check(name + ": reserved maximum == reserved peak",
                  max(counters(events, dev, "reserved")) == d["peak_reserved"]["bytes"])
            check(name + ": active counter", len(counters(events, dev, "active")) == len(allocated))
            trace = events_of(path, dev)
            check(name + ": every event is kept (fewer than --points)", len(allocated) == len(trace),
                  (len(allocated), len(trace)))
            # Instants: every OOM, every segment event, with their own indices; the snapshot's clock.
            ooms = [e for e in events if e["pid"] == dev and e["name"] == "out of memory"]
            want_ooms = [r["index"] for r in trace if r["action"] == "oom"]
            check(name + ": OOM instants", [e["args"]["event_index"] for e in ooms] == want_ooms,
                  ([e["args"]["event_index"] for e in ooms], want_ooms))
            segs = [e for e in events if e["pid"] == dev and e["name"].startswith("segment_")]
            want_segs = [(r["index"], r["action"], r["time_us"]) for r in trace if r["action"].startswith("segment_")]
            check(name + ": segment instants", [(e["args"]["event_index"], e["name"], e["ts"]) for e in segs] ==
                  want_segs)
            for e in ooms + segs:
                if not check(name + ": a stack in args", isinstance(e["args"].get("stack"), list), e):
                    break
            times = [e["ts"] for e in events if e["pid"] == dev and e["ph"] == "C"]
            check(name + ": counters in the snapshot's clock", min(times) == d["trace"]["first_time_us"] and
                  max(times) == d["trace"]["last_time_us"], (min(times), max(times), d["trace"]))
            slices = [e for e in events if e["pid"] == dev and e["ph"] == "X"]
            check(name + ": one slice per iteration", len(slices) == len(d["iterations"]["boundaries"]),
                  (len(slices), d["iterations"]["boundaries"]))

    # --points bounds the counters; the peak is still there.
    rc, so, se = run(["export", "--format", "perfetto", snap("frag.pickle"), "--points", "50"])
    doc = json.loads(so)
    allocated = counters(doc["traceEvents"], 0, "allocated")
    rc2, so2, se2 = run(["analyze", "--format", "json", snap("frag.pickle")])
    check("--points 50: bounded", 2 <= len(allocated) <= 50, len(allocated))
    check("--points 50: the peak kept", max(allocated) == json.loads(so2)["devices"][0]["peak"]["allocated_bytes"])
    check("-o - is stdout, nothing on stderr", rc == 0 and se == "", se)

    # A snapshot without a trace has no timeline to export.
    expect_error("no trace", ["export", "--format", "perfetto", snap("list.pickle")],
                 snap("list.pickle") + ": the snapshot has no trace entries (recorded with enabled='state' or "
                 "history off): no timeline to export")

finish()
