#!/usr/bin/env python3
# Exact figures at every event: every snapgen fixture's peaks (value and event, the window's
# opening as -1) equal its truth file, the replay ends on the dumped layout, check --max-peak
# judges the exact peak, the rebuilt OOM message is PyTorch's byte for byte (classic and
# expandable segments), iterations grow by the truth's step with four steps and three are found.
import json
import os
import subprocess
import sys

from clitest import check, finish, format_size, run, snap, TESTDATA

HERE = os.path.dirname(os.path.abspath(__file__))


def manifest():
    with open(snap("MANIFEST.tsv")) as fh:
        for line in fh:
            f, t, _ = line.rstrip("\n").split("\t", 2)
            yield f, t


def analyze(path, *extra):
    rc, out, err = run(["analyze", "--format", "json", path] + list(extra))
    check(path + ": analyze", rc == 0, "exit %d: %s" % (rc, err))
    return json.loads(out) if rc == 0 else {"devices": []}


# --- peaks against the truth, and against the independent oracle ---------------------------------
compared = window_start = more_sites = 0
files = []
for f, t in manifest():
    with open(snap(t)) as fh:
        truth = json.load(fh)
    doc = analyze(snap(f))
    devices = {d["device"]: d for d in doc["devices"]}
    for i, pd in enumerate(truth["per_device"]):
        want = pd.get("peak")
        d = devices.get(i)
        if not want or not d or d.get("peak") is None:
            continue  # the file keeps no trace (list form)
        got = (d["peak"]["allocated_bytes"], d["peak"]["event_index"], d["peak_reserved"]["bytes"],
               d["peak_reserved"]["event_index"])
        exp = (want["allocated_bytes"], want["allocated_event_index"], want["reserved_bytes"],
               want["reserved_event_index"])
        check("%s device %d: peaks equal the truth" % (f, i), got == exp, "got %r, truth %r" % (got, exp))
        check("%s device %d: at_window_start" % (f, i),
              d["peak"]["at_window_start"] == (exp[1] == -1) and d["peak_reserved"]["at_window_start"] == (exp[3] == -1))
        # nothing live at the peak is dropped: the sites listed and the rest hold the peak
        listed = sum(s["live_bytes"] for s in d["peak"]["top_sites"])
        rest = d["peak"]["other_sites"]
        check("%s device %d: listed and other sites hold the peak" % (f, i),
              listed + rest["live_bytes"] == want["allocated_bytes"] and
              (rest["sites"] == 0 or len(d["peak"]["top_sites"]) == 10) and
              (rest["sites"] > 0) == (rest["live_bytes"] > 0), "%d + %r vs %d" % (listed, rest, want["allocated_bytes"]))
        more_sites += rest["sites"] > 0
        lay = d["trace"].get("layout") or {}
        check("%s device %d: replay ends on the dumped layout" % (f, i),
              lay.get("equal") is True and lay.get("blocks_compared", 0) > 0, repr(lay))
        compared += 1
        window_start += exp[1] == -1
    files.append(snap(f))
check("fixtures compared", compared >= 25, "only %d devices" % compared)
check("a fixture whose peak is the window's opening", window_start >= 1)
check("a fixture with more than ten sites at the peak", more_sites >= 1, str(more_sites))

oracle = json.loads(subprocess.run([sys.executable, os.path.join(HERE, "..", "oracle", "exact_peaks.py")] + files,
                                   stdout=subprocess.PIPE, check=True, text=True).stdout)["files"]
for f, t in manifest():
    with open(snap(t)) as fh:
        truth = json.load(fh)
    for od in oracle[snap(f)]["devices"]:
        want = truth["per_device"][od["device"]].get("peak")
        if not want:
            continue
        check("oracle agrees with the truth on %s" % f,
              (od["allocated_bytes"], od["reserved_bytes"]) == (want["allocated_bytes"], want["reserved_bytes"]) and
              od["layout_equal"], "%r vs %r" % (od, want))

# --- check --max-peak judges the exact peak ------------------------------------------------------
with open(snap("frag.truth.json")) as fh:
    peak = json.load(fh)["per_device"][0]["peak"]["allocated_bytes"]
rc, out, err = run(["check", "--max-peak", str(peak - 1), snap("frag.pickle")])
check("check --max-peak one byte under the exact peak fails", rc == 1, "exit %d: %s" % (rc, out + err))
rc, out, err = run(["check", "--max-peak", str(peak), snap("frag.pickle")])
check("check --max-peak at the exact peak passes", rc == 0, "exit %d: %s" % (rc, out + err))


# --- the rebuilt OOM message, byte for byte (SNAPSHOT_FORMAT.md §10) ------------------------------


for name in ("capacity", "capacity_expandable"):
    with open(snap(name + ".truth.json")) as fh:
        truth = json.load(fh)
    o = truth["oom"]
    cap = truth["capacity_bytes"][o["device"]]
    want = ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "
            "Including non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is "
            "allocated by PyTorch, and %s is reserved by PyTorch but unallocated. If reserved but unallocated "
            "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)" %
            (format_size(o["segment_request"]), o["device"], format_size(cap), format_size(o["device_free"]),
             format_size(cap - o["device_free"]), format_size(o["allocated"]),
             format_size(o["reserved"] - o["allocated"])))
    doc = analyze(snap(name + ".pickle"), "--capacity", str(cap))
    got = doc["devices"][0]["oom"]["message"] if doc["devices"] else ""
    check(name + ": rebuilt message is PyTorch's byte for byte", got == want, "\n got  %r\n want %r" % (got, want))
    rc, text, err = run(["analyze", "--oom-message", want, snap(name + ".pickle")])
    check(name + ": PyTorch's own message is this request", rc == 0 and ": this request" in text, text)

# --- iterations: the median step with four; three found -----------------------------------------
for name, steps in (("train4", 4), ("leak3", 3), ("leak", 12)):
    with open(snap(name + ".truth.json")) as fh:
        truth = json.load(fh)
    it = analyze(snap(name + ".pickle"))["devices"][0]["iterations"]
    grow = truth.get("leak", {}).get("bytes_per_step_per_device", 0)
    check(name + ": iterations found", it["count"] == truth["iterations"] == steps, repr(it))
    check(name + ": growth per iteration", it["growth_bytes_per_iteration"] == grow,
          "%r, truth %d" % (it["growth_bytes_per_iteration"], grow))

finish()
