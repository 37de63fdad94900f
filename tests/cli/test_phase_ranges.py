#!/usr/bin/env python3
# Issue 54, `analyze --phases annotations`: the user's own record_function START/END ranges are
# the phases (Mosaic's annotation stages). Fixtures are made here from snapgen's (their trace,
# plus external_annotations written around events chosen here); the expected phase is computed
# here from the pickle: the innermost range whose START is at or before the state's event time
# and whose END is after it. peak.phase and each OOM's phase read the user's range name (null
# outside every range, "outside the annotated ranges" in text); torch.compile's ranges
# ("... (dynamo_timed)", pad_mm_benchmark) read "torch.compile autotuning"; by default the phases
# stay memsnap's, and a torch.compile range around the peak is named beside them; a repeat inside
# one is torch.compile's autotuning, not a loop; a file without ranges warns; a bad value of
# --phases is a usage error.
import json
import os
import pickle
import tempfile

from clitest import check, finish, run, snap


def analyze(path, *extra):
    rc, out, err = run(["analyze", "--format", "json", path] + list(extra))
    check("analyze %s %s" % (os.path.basename(path), " ".join(extra)), rc == 0, err[:300])
    return json.loads(out)["devices"][0] if rc == 0 else None


def text(path, *extra):
    rc, out, err = run(["analyze", path] + list(extra))
    return out.replace("\n             ", " ")


def with_ranges(src, dst, ranges):
    """`src` with record_function ranges [(name, first event, last event)]: START at the first event's time,
    END one microsecond after the last's."""
    with open(src, "rb") as fh:
        d = pickle.load(fh)
    trace = d["device_traces"][0]
    ann = []
    for name, a, b in ranges:
        ann.append({"device": 0, "time_us": trace[a]["time_us"], "name": name, "stage": "START"})
        ann.append({"device": 0, "time_us": trace[b]["time_us"] + 1, "name": name, "stage": "END"})
    ann.sort(key=lambda x: x["time_us"])
    d["external_annotations"] = ann
    with open(dst, "wb") as fh:
        pickle.dump(d, fh, protocol=4)
    return trace


def innermost(trace, ranges, event):
    """The innermost range open at `event` by time (the latest START among those open)."""
    t = trace[event]["time_us"]
    best = None
    for name, a, b in ranges:
        s, e = trace[a]["time_us"], trace[b]["time_us"] + 1
        if s <= t < e and (best is None or s >= best[1]):
            best = (name, s)
    return best[0] if best else None


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "train_ranges.pickle")
    with open(snap("train.truth.json")) as fh:
        peak = json.load(fh)["per_device"][0]["peak"]["allocated_event_index"]
    ranges = [("load_model", 0, 10), ("step", 11, 254), ("step#optimizer", peak - 5, peak + 3),
              ("step#inner", peak - 1, peak)]
    trace = with_ranges(snap("train.pickle"), path, ranges)
    want = innermost(trace, ranges, peak)
    d = analyze(path, "--phases", "annotations")
    if d:
        check("train: peak.phase is the user's innermost range", d["peak"]["phase"] == want == "step#inner",
              "%r, want %r" % (d["peak"]["phase"], want))
        check("train: peak.annotation", d["peak"]["annotation"] == want, repr(d["peak"]["annotation"]))
        check("train: phases_source", d["phases_source"] == "user_annotations", d["phases_source"])
    out = text(path, "--phases", "annotations")
    check("train: the text names the range", ("in '%s':" % want) in out, out[:3000])
    # By default the phases stay memsnap's (the fixture's peak is in the optimizer step) and a
    # user's range is not named.
    d0 = analyze(path)
    base = analyze(snap("train.pickle"))
    if d0 and base:
        check("train: default phases unchanged", d0["peak"]["phase"] == base["peak"]["phase"] and
              d0["phases_source"] == base["phases_source"], "%r vs %r" % (d0["peak"]["phase"], base["peak"]["phase"]))
        check("train: default names no user range", d0["peak"]["annotation"] is None, repr(d0["peak"]["annotation"]))

    # Outside every range: null, and the text says so.
    outside = [("early", 0, 10)]
    path2 = os.path.join(tmp, "train_outside.pickle")
    trace = with_ranges(snap("train.pickle"), path2, outside)
    d = analyze(path2, "--phases", "annotations")
    if d:
        check("outside: phase null", d["peak"]["phase"] is None and innermost(trace, outside, peak) is None,
              repr(d["peak"]))
    check("outside: text", "outside the annotated ranges:" in text(path2, "--phases", "annotations"), "")

    # torch.compile's ranges: named as such, by default beside memsnap's phase too.
    compiled = [("_compile.compile_inner (dynamo_timed)", 0, 254), ("pad_mm_benchmark (dynamo_timed)", peak - 2, peak)]
    path3 = os.path.join(tmp, "train_compile.pickle")
    trace = with_ranges(snap("train.pickle"), path3, compiled)
    d = analyze(path3, "--phases", "annotations")
    if d:
        check("compile: phase", d["peak"]["phase"] == "torch.compile autotuning", repr(d["peak"]["phase"]))
        check("compile: annotation", d["peak"]["annotation"] == innermost(trace, compiled, peak), repr(d["peak"]))
    d = analyze(path3)
    if d and base:
        check("compile by default: memsnap's phase kept", d["peak"]["phase"] == base["peak"]["phase"], repr(d["peak"]))
        check("compile by default: the range named", d["peak"]["annotation"] == "pad_mm_benchmark (dynamo_timed)",
              repr(d["peak"]["annotation"]))
    check("compile by default: text", "inside torch.compile autotuning (pad_mm_benchmark):" in text(path3), "")

    # A repeat inside a torch.compile range is its autotuning, not a loop of the program.
    with open(snap("forward.pickle"), "rb") as fh:
        n = len(pickle.load(fh)["device_traces"][0])
    path4 = os.path.join(tmp, "forward_compile.pickle")
    with_ranges(snap("forward.pickle"), path4, [("CachingAutotuner.benchmark_all_configs (dynamo_timed)", 0, n - 1)])
    d, plain = analyze(path4), analyze(snap("forward.pickle"))
    if d and plain:
        check("repeat in autotuning: kind", plain["structure"]["kind"] != "torch_compile_autotuning" and
              d["structure"]["kind"] == "torch_compile_autotuning", repr(d["structure"]))
        check("repeat in autotuning: words", d["structure"]["description"].startswith(
            "torch.compile autotuning (CachingAutotuner.benchmark_all_configs), "), d["structure"]["description"])
    check("repeat in autotuning: text", "not a loop of the program" in text(path4) and
          "none: the repeated allocations are torch.compile's autotuning" in text(path4), "")

    # An OOM's phase: the range open at the OOM event.
    with open(snap("capacity.pickle"), "rb") as fh:
        cap_trace = pickle.load(fh)["device_traces"][0]
    oom = next(i for i, e in enumerate(cap_trace) if e["action"] == "oom")
    path5 = os.path.join(tmp, "capacity_ranges.pickle")
    oranges = [("eval", 0, oom), ("eval#batch", oom - 3, oom)]
    trace = with_ranges(snap("capacity.pickle"), path5, oranges)
    d = analyze(path5, "--phases", "annotations")
    if d:
        phases = [o["phase"] for o in d["ooms"] if o["event_index"] == oom]
        check("OOM phase: the user's range", phases == [innermost(trace, oranges, oom)] == ["eval#batch"], repr(phases))

    # No ranges: a warning, memsnap's phases.
    rc, out, err = run(["analyze", "--phases", "annotations", snap("train.pickle")])
    check("no ranges: warns", rc == 0 and "--phases annotations: device 0 has no record_function ranges" in out + err,
          err[:300])
    rc, out, err = run(["analyze", "--phases", "bogus", snap("train.pickle")])
    check("bad --phases: usage error", rc == 2 and "--phases" in err and err.count("\n") <= 2, "%d %r" % (rc, err))
finish()
