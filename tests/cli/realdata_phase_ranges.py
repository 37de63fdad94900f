#!/usr/bin/env python3
# Issue 54, record_function ranges as phases, on real snapshots in ../shared/realdata (never
# copied into the project; exit 77 = SKIP when the folder is absent). kkaitlyn111's
# memory_2.7b_forward.pickle holds torch.compile's own ranges (compile_inner, 867
# pad_mm_benchmark, CachingAutotuner.benchmark_all_configs, all "(dynamo_timed)"): its peak lies
# inside the innermost of them computed here from the pickle, and is named "torch.compile
# autotuning" (beside memsnap's phase by default, as the phase with --phases annotations); its
# repeated blocks lie inside one of them and are autotuning, not a loop. notHanmin's file has
# only Optimizer.step / zero_grad ranges: with --phases annotations its peak (in the forward) is
# outside them, as computed here.
import os
import pickle
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from realtest import REAL, check, finish  # noqa: E402
from realtest import analyze as analyze_doc  # noqa: E402


def analyze(path, *extra):
    doc = analyze_doc(path, *extra)
    return doc["devices"][0] if doc else None


def innermost(doc, event):
    """The innermost record_function range open at trace event `event` (by time), or None."""
    trace = doc["device_traces"][0]
    t = trace[event]["time_us"]
    open_ = []
    for a in sorted(doc.get("external_annotations", []), key=lambda a: a["time_us"]):
        if a["time_us"] > t:
            break
        if a["stage"] == "START":
            open_.append(a["name"])
        elif a["name"] in open_:
            del open_[len(open_) - 1 - open_[::-1].index(a["name"])]
    return open_[-1] if open_ else None


path = os.path.join(REAL, "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle")
with open(path, "rb") as fh:
    doc = pickle.load(fh)
d = analyze(path)
if d:
    want = innermost(doc, d["peak"]["event_index"])
    check("kkaitlyn 2.7b: the peak is inside a torch.compile range", want and "(dynamo_timed)" in want, repr(want))
    check("kkaitlyn 2.7b: peak.annotation", d["peak"]["annotation"] == want, repr(d["peak"]["annotation"]))
    check("kkaitlyn 2.7b: memsnap's phase kept by default", d["peak"]["phase"] == "forward", d["peak"]["phase"])
    s = d["structure"]
    check("kkaitlyn 2.7b: the repeats are autotuning", s["kind"] == "torch_compile_autotuning" and
          innermost(doc, s["first_event"]) is not None and "(dynamo_timed)" in innermost(doc, s["first_event"]),
          repr(s))
d = analyze(path, "--phases", "annotations")
if d:
    check("kkaitlyn 2.7b --phases annotations: phase", d["peak"]["phase"] == "torch.compile autotuning",
          repr(d["peak"]))
    check("kkaitlyn 2.7b --phases annotations: source", d["phases_source"] == "user_annotations", d["phases_source"])

path = os.path.join(REAL, "notHanmin__assignment2-systems__memory_snapshot.pickle")
with open(path, "rb") as fh:
    doc = pickle.load(fh)
d = analyze(path, "--phases", "annotations")
if d:
    want = innermost(doc, d["peak"]["event_index"])
    check("notHanmin --phases annotations: the peak's range", d["peak"]["phase"] == want and want is None,
          "%r, want %r" % (d["peak"]["phase"], want))
finish()
