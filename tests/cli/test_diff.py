#!/usr/bin/env python3
"""memsnap diff compares the peaks, and matches segments by address only within one process.

  test_diff.py MEMSNAP TESTDATA [REALDATA]

Two snapgen runs of one model at batch 2 and batch 4 (two processes, testdata/diff/): the peaks and their
event indices in diff's JSON equal each truth file's; the sites live at each peak hold the
peak's bytes and as many blocks per site as an independent replay of each trace finds live
at its peak event. The leak scenario's step-4 and step-10 dumps come from one run: there
the segments only one side has are listed. With ../shared/realdata: Wedsonlin's medium
model at batch 128 and 256 (peaks from the oracle tests/oracle/exact_peaks.py).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clitest import check, finish, run, TESTDATA  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
from snapshot_totals import load  # noqa: E402  (the safe loader)


def truth_of(path):
    with open(path[: -len(".pickle")] + ".truth.json") as f:
        return json.load(f)


def user_site(frames):
    """The innermost frame outside the Python installation: (file, function, line), or None."""
    for f in frames:
        name = f.get("filename", "")
        if "site-packages" in name or "/torch/" in name or name.startswith("<frozen"):
            continue
        return (name, f.get("name", ""), f.get("line", 0))
    return None


def live_at(path, event):
    """Blocks allocated right after trace event `event` (the trace starts empty), by user site."""
    doc, _ = load(path)
    live = {}
    for e in doc["device_traces"][0][: event + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = user_site(e.get("frames", []))
        elif e["action"] in ("free_requested", "free"):
            live.pop(e["addr"], None)
    counts = {}
    for site in live.values():
        counts[site] = counts.get(site, 0) + 1
    return counts


def check_peak_sites(name, dev, before_path, after_path, tb, ta):
    rows = dev["peak_sites"]
    check(name + ": peak sites hold the before peak", sum(r["before_bytes"] for r in rows) == tb["allocated_bytes"],
          "%d vs %d" % (sum(r["before_bytes"] for r in rows), tb["allocated_bytes"]))
    check(name + ": peak sites hold the after peak", sum(r["after_bytes"] for r in rows) == ta["allocated_bytes"])
    for side, path, truth in (("before", before_path, tb), ("after", after_path, ta)):
        want = live_at(path, truth["allocated_event_index"])
        got = {}
        for r in rows:
            if r[side + "_allocations"] and r["file"]:
                got[(r["file"], r["function"], r["line"])] = r[side + "_allocations"]
        user = {k: v for k, v in want.items() if k is not None}
        check(name + ": blocks per user site at the " + side + " peak", got == user, "%r vs %r" % (got, user))
        check(name + ": blocks at the " + side + " peak", sum(r[side + "_allocations"] for r in rows) ==
              sum(want.values()))


def two_processes():
    a, b = (os.path.join(TESTDATA, "diff", "train_batch%d.pickle" % n) for n in (2, 4))
    ta, tb = truth_of(a)["per_device"][0]["peak"], truth_of(b)["per_device"][0]["peak"]
    rc, out, err = run(["diff", "--format", "json", a, b])
    check("two runs: json exit", rc == 0 and err == "", "%d %r" % (rc, err))
    doc = json.loads(out)
    check("two runs: not one process", doc["process"]["relation"] != "same" and
          doc["process"]["segments_matched_by_address"] is False, str(doc["process"]))
    dev = doc["devices"][0]
    check("two runs: no segments listed by address", dev["segments_only_before"] == [] and
          dev["segments_only_after"] == [])
    p = dev["peaks"]
    for side, truth in (("before", ta), ("after", tb)):
        for k in ("allocated_bytes", "allocated_event_index", "reserved_bytes", "reserved_event_index"):
            check("two runs: %s peak %s" % (side, k), p[side][k] == truth[k], "%r vs %r" % (p[side][k], truth[k]))
    check("two runs: allocated peak delta", p["allocated_delta_bytes"] == tb["allocated_bytes"] - ta["allocated_bytes"])
    check("two runs: reserved peak delta", p["reserved_delta_bytes"] == tb["reserved_bytes"] - ta["reserved_bytes"])
    check_peak_sites("two runs", dev, a, b, ta, tb)
    rc, out, err = run(["diff", a, b], env={"COLUMNS": "80"})
    lines = out.splitlines()
    check("two runs: text exit", rc == 0 and err == "", "%d %r" % (rc, err))
    check("two runs: text fits 80 columns", all(len(l) <= 80 for l in lines), max(lines, key=len))
    check("two runs: no segment lists in text", "segments only" not in out, out)
    check("two runs: says why", "segments are not matched by address" in out.replace("\n  ", " "), out)
    head = next((k for k, l in enumerate(lines) if l.startswith(" " * 28) and l.split()[:1] == ["before"]), 0)
    check("two runs: peak rows first", [l.split()[:2] for l in lines[head + 1:head + 3]] ==
          [["peak", "allocated"], ["peak", "reserved"]], "\n".join(lines[:12]))
    check("two runs: sites at the peak", "live at the peak by site" in out, out)
    roles_vs_truth(a, b, doc, out)


ROLES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "autocast_cache",
         "kv_cache", "communication", "other", "unknown"]
WORDS = {"parameter": "weights", "gradient": "gradients", "optimizer_state": "optimizer state",
         "activation": "activations", "temporary": "temporaries", "input": "inputs"}


def human(n):
    """memsnap's human_bytes of |n|."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return "%.2f %s" % (abs(n) / scale, unit)
    return "%d B" % abs(n)


def signed(n):
    return "0 B" if n == 0 else ("+" if n > 0 else "-") + human(n)


def roles_vs_truth(a, b, doc, out):
    """Issue 54: diff's bytes by role at each peak and at the dump are each truth's, byte for byte (the
    truth of these runs calls nothing `other`), their differences the truths' differences; each peak's
    phase is analyze's; the text leads with the peak's change and lists the roles at the peaks."""
    dev = doc["devices"][0]
    truth = [truth_of(a)["per_device"][0], truth_of(b)["per_device"][0]]
    check("two runs: the truth names no other", all(not t["peak"]["allocated_by_role"].get("other") and
                                                    not t["allocated_by_role"].get("other") for t in truth))
    want_peak = [{r: t["peak"]["allocated_by_role"].get(r, 0) for r in ROLES} for t in truth]
    want_dump = [{r: t["allocated_by_role"].get(r, 0) for r in ROLES} for t in truth]
    for k, side in enumerate(("before", "after")):
        got = dev["peaks"][side].get("by_role")
        check("two runs: %s peak by role is the truth's" % side, got == want_peak[k], "%r vs %r" % (got, want_peak[k]))
        got = dev.get("totals_by_role", {}).get(side)
        check("two runs: %s dump by role is the truth's" % side, got == want_dump[k], "%r vs %r" % (got, want_dump[k]))
    delta = {r: want_peak[1][r] - want_peak[0][r] for r in ROLES}
    check("two runs: peak by role deltas", dev["peaks"].get("by_role_delta_bytes") == delta,
          "%r vs %r" % (dev["peaks"].get("by_role_delta_bytes"), delta))
    delta = {r: want_dump[1][r] - want_dump[0][r] for r in ROLES}
    check("two runs: dump by role deltas", dev.get("totals_by_role", {}).get("delta_bytes") == delta, repr(dev))
    phases = []
    for path in (a, b):
        rc, js, err = run(["analyze", "--format", "json", path])
        phases.append(json.loads(js)["devices"][0]["peak"]["phase"] if rc == 0 else "?")
    for k, side in enumerate(("before", "after")):
        check("two runs: %s peak phase is analyze's" % side, dev["peaks"][side].get("phase") == phases[k],
              "%r vs %r" % (dev["peaks"][side].get("phase"), phases[k]))
    check("two runs: peak_moved_phase", dev.get("peak_moved_phase") is (phases[0] != phases[1]),
          repr(dev.get("peak_moved_phase")))
    # Text: the lead sentence, then a phase row and a row for every role at either peak.
    pa, pb = truth[0]["peak"]["allocated_bytes"], truth[1]["peak"]["allocated_bytes"]
    lead = out.split("device 0: ", 1)[-1].split("\n  " + " " * 20, 1)[0].replace("\n  ", " ")
    want = "peak allocated %s (%s -> %s), peak reserved %s;" % (
        signed(pb - pa), human(pa), human(pb),
        signed(truth[1]["peak"]["reserved_bytes"] - truth[0]["peak"]["reserved_bytes"]))
    check("two runs: the lead states the peak's change", lead.startswith(want), "%r, want %r" % (lead, want))
    table = out.split("  peak by role\n", 1)[-1].split("  at the dump\n", 1)[0]
    rows = {l[:30].strip(): l[30:].split() for l in table.splitlines()}
    for r, words in WORDS.items():
        x, y = want_peak[0][r], want_peak[1][r]
        if x or y:
            cells = [human(x), human(y), signed(y - x)]
            got = rows.get(words, [])
            check("two runs: peak row for %s" % r, [" ".join(got[i:i + 2]) for i in (0, 2, 4)] == cells,
                  "%r vs %r" % (got, cells))


def one_process():
    step4 = os.path.join(TESTDATA, "snapgen", "leak.step4.pickle")
    step10 = os.path.join(TESTDATA, "snapgen", "leak.step10.pickle")
    rc, out, err = run(["diff", "--format", "json", step4, step10])
    doc = json.loads(out)
    check("one run: one process", doc["process"] == {"relation": "same", "evidence": "shared_events", "device": 0,
                                                     "segments_matched_by_address": True}, str(doc["process"]))
    dev = doc["devices"][0]
    check("one run: the new segment listed", len(dev["segments_only_after"]) == dev["totals_delta"]["segments"] == 1)
    rc, out, err = run(["diff", step4, step10], env={"COLUMNS": "80"})
    check("one run: segment lists in text", "segments only in after: 1" in out, out)


def realdata(root):
    before = os.path.join(root, "Wedsonlin__assignment2-systems__medium_128_training_memory_snapshot.pickle")
    after = os.path.join(root, "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle")
    if not (os.path.exists(before) and os.path.exists(after)):
        return
    import subprocess
    oracle = os.path.join(HERE, "..", "oracle", "exact_peaks.py")
    want = json.loads(subprocess.run([sys.executable, oracle, before, after], stdout=subprocess.PIPE,
                                     check=True).stdout)["files"]
    rc, out, err = run(["diff", "--format", "json", before, after])
    doc = json.loads(out)
    check("Wedsonlin: not one process", doc["process"]["relation"] != "same", str(doc["process"]))
    dev = doc["devices"][0]
    for side, path in (("before", before), ("after", after)):
        o = want[path]["devices"][0]
        for k in ("allocated_bytes", "reserved_bytes"):
            check("Wedsonlin: %s peak %s" % (side, k), dev["peaks"][side][k] == o[k],
                  "%r vs %r" % (dev["peaks"][side][k], o[k]))
        check("Wedsonlin: %s peak sites" % side, sum(r[side + "_bytes"] for r in dev["peak_sites"]) ==
              o["allocated_bytes"])
    rc, out, err = run(["diff", before, after], env={"COLUMNS": "80"})
    check("Wedsonlin: no segment lists", rc == 0 and "segments only" not in out and "0x" not in out, out)
    check("Wedsonlin: 80 columns", all(len(l) <= 80 for l in out.splitlines()), out)
    # silmont2000's fp32 and bf16 runs: the count of unchanged sites, in words that agree with it
    before = os.path.join(root, "silmont2000__assignment2-systems__memory_forward_fp32_128.pickle")
    after = os.path.join(root, "silmont2000__assignment2-systems__memory_forward_bf16_128.pickle")
    if os.path.exists(before) and os.path.exists(after):
        rc, js, err = run(["diff", "--format", "json", before, after])
        rc, out, err = run(["diff", before, after], env={"COLUMNS": "80"})
        for key, title in (("peak_sites", "live at the peak by site"), ("sites", "live at the dump by site")):
            n = sum(1 for r in json.loads(js)["devices"][0][key]
                    if r["delta_bytes"] == 0 and r["before_allocations"] == r["after_allocations"])
            table = out.split(title, 1)[-1].split("\n\n", 1)[0]
            check("silmont2000: %s: %d unchanged" % (key, n), n > 0 and
                  "  %d %s unchanged\n" % (n, "site" if n == 1 else "sites") in table + "\n", table)


def main():
    two_processes()
    one_process()
    if len(sys.argv) > 3:
        realdata(sys.argv[3])
    finish()


main()
