#!/usr/bin/env python3
# memsnap simulate: with the recorded settings it reproduces every snapgen run (segment sizes in
# order, peak reserved, OOM event, as the trace recorded them); a frag OOM goes away under
# expandable segments, a capacity OOM does not and --min-capacity answers above the recorded
# device; bad settings and capacities are one-line errors; the text fits 80 columns.
import json
import os
import pickle
import subprocess
import sys
import tempfile

from clitest import check, expect_error, finish, run, skip, snap


def simulate(*args):
    rc, out, err = run(["simulate", "--format", "json"] + list(args))
    check("simulate %s" % " ".join(args), rc == 0, "exit %d: %s" % (rc, err))
    return json.loads(out) if rc == 0 else None


def human(n):
    """memsnap's human_bytes for sizes of MiB and above."""
    return "%.2f MiB" % (n / (1 << 20)) if n < (1 << 30) else "%.2f GiB" % (n / (1 << 30))


def recorded_segments(path):
    """The segment_alloc / segment_map sizes and the first OOM event, read from `events --format json`."""
    rc, out, err = run(["events", "--format", "json", "--count", "10000000", path])
    devices = json.loads(out)["devices"] if rc == 0 else []
    return devices


with open(snap("MANIFEST.tsv")) as fh:
    fixtures = [line.split("\t")[0] for line in fh]
ran = 0
for f in fixtures:
    with open(snap(f.replace(".pickle", "").replace(".gz", "").replace(".zst", "") + ".truth.json")) as fh:
        truth = json.load(fh)
    if not any(pd.get("trace_entries") for pd in truth["per_device"]) or f.startswith("list"):
        continue
    doc = simulate(snap(f))
    if not doc:
        continue
    ran += 1
    r0, rec = doc["runs"][0], doc["recorded"]
    fid = r0["fidelity"]
    check(f + ": as recorded reproduces the run", fid["identical"] is True, repr(fid))
    check(f + ": recorded figures", r0["peak_reserved_bytes"] == rec["peak_reserved_bytes"] and
          r0["segment_allocs"] == rec["segment_allocs"] and r0["segment_frees"] == rec["segment_frees"],
          "%r vs %r" % (r0, rec))
    # Stranded: what empty_cache() cannot return; with expandable segments whole free pages it
    # unmaps are not stranded, in the recorded column as in the model's.
    check(f + ": stranded at the peak as recorded", r0["stranded_at_peak_bytes"] == rec["stranded_at_peak_bytes"] and
          r0["retries"] == rec["retries"], "%r vs %r" % (r0, rec))
    # The recorded figures are the truth's (the device simulated: the first OOM, else the largest).
    pd = truth["per_device"][doc["device"]]
    check(f + ": recorded peak reserved is the truth's", rec["peak_reserved_bytes"] == pd["peak"]["reserved_bytes"],
          "%d vs %d" % (rec["peak_reserved_bytes"], pd["peak"]["reserved_bytes"]))
    oom = truth.get("oom")
    if oom and oom["device"] == doc["device"]:
        check(f + ": OOM where the recorded run had it", r0["oom"] is not None and rec["oom"] is not None and
              r0["oom"]["event_index"] == rec["oom"]["event_index"] and
              r0["oom"]["requested_bytes"] == oom["requested_rounded"], "%r %r" % (r0["oom"], oom))
    else:
        check(f + ": no OOM", r0["oom"] is None and rec["oom"] is None, repr(r0["oom"]))
    # Segment by segment: the events the trace recorded.
    for d in recorded_segments(snap(f)):
        if d["device"] != doc["device"]:
            continue
        sizes = [e["size_bytes"] for e in d["events"] if e["action"] in ("segment_alloc", "segment_map")]
        check(f + ": recorded segment count", len(sizes) == fid["segments_recorded"] == fid["segments_matching"],
              "%d %r" % (len(sizes), fid))
check("fixtures simulated", ran >= 20, "only %d" % ran)

# --- what-ifs ------------------------------------------------------------------------------------
with open(snap("frag.truth.json")) as fh:
    frag = json.load(fh)
doc = simulate(snap("frag.pickle"), "--set", "expandable_segments:True")
if doc:
    check("frag: recorded OOM", doc["runs"][0]["oom"] is not None)
    check("frag: expandable_segments:True runs", doc["runs"][1]["oom"] is None and
          doc["runs"][1]["settings"]["expandable_segments"] is True, repr(doc["runs"][1]))
rc, out, err = run(["analyze", "--format", "json", snap("frag.pickle")])
w = json.loads(out)["devices"][0]["oom"]["what_if"] if rc == 0 else None
check("analyze frag: what if expandable segments", w is not None and w["setting"] == "expandable_segments:True" and
      w["fits"] is True, repr(w))

with open(snap("capacity.truth.json")) as fh:
    capt = json.load(fh)
cap = capt["capacity_bytes"][0]
doc = simulate(snap("capacity.pickle"), "--set", "expandable_segments:True", "--min-capacity")
if doc:
    check("capacity: recorded capacity", doc["runs"][0]["capacity_bytes"] == cap,
          "%r vs %d" % (doc["runs"][0]["capacity_bytes"], cap))
    check("capacity: still fails with expandable segments", doc["runs"][1]["oom"] is not None)
    m = doc["min_capacity_bytes"]
    check("capacity: --min-capacity above the recorded device", m is not None and m > cap, "%r vs %d" % (m, cap))
    # and it is the smallest: 2 MiB less fails, the answer runs.
    if m:
        d1 = simulate(snap("capacity.pickle"), "--capacity", str(m))
        d2 = simulate(snap("capacity.pickle"), "--capacity", str(m - 2 * 1024 * 1024))
        check("capacity: the answer runs", d1 and d1["runs"][0]["oom"] is None)
        check("capacity: 2 MiB less fails", d2 and d2["runs"][0]["oom"] is not None)

doc = simulate(snap("train.pickle"), "--set", "max_split_size_mb:21,garbage_collection_threshold:0.6",
               "--set", "roundup_power2_divisions:4")
if doc:
    s1, s2 = doc["runs"][1]["settings"], doc["runs"][2]["settings"]
    check("settings parsed", s1["max_split_size_bytes"] == 21 << 20 and s1["garbage_collection_threshold"] == 0.6 and
          s2["roundup_power2_divisions"] == [[1 << k, 4] for k in range(16)], "%r %r" % (s1, s2))
    check("no capacity known: none assumed", doc["runs"][0]["capacity_bytes"] is None)

# --- fidelity that can fail ---------------------------------------------------------------------
# A copy of the frag run with one alloc made 3 MiB larger, so that it overlaps a block the trace
# put right after it while both were live: the model cannot put both where the trace says, and
# "identical" would be a lie. The edit is made here, on the fixture's own trace.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import snapshot_totals  # noqa: E402

MiB = 1 << 20


def one_alloc_larger(path, out):
    """Writes to `out` a copy of `path` with one alloc 3 MiB larger, one that then overlaps a block
    the trace put right after it while both were live; returns (edited event, the earliest event
    the edit can show at: its own or the segment the recorded run made for it), or None."""
    top, _ = snapshot_totals.load(path)
    trace = top["device_traces"][0]
    ends, by_addr = {}, {}  # alloc index -> its free_completed (or free) index
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        if e["action"] in ("free_completed", "free"):
            by_addr[e.get("addr")] = i
        elif e["action"] == "alloc":
            ends[i] = by_addr.get(e["addr"], len(trace))
    lives = sorted((trace[i]["addr"], i) for i in ends)
    victim = None
    for k, (a, i) in enumerate(lives):
        n = trace[i]["size"]
        if n < MiB:
            continue
        for b, j in lives[k + 1:]:
            if b >= a + n + 3 * MiB:
                break
            if b >= a + n and j != i and j < ends[i] and i < ends[j]:
                victim = i
                break
        if victim is not None:
            break
    if victim is None:
        return None
    a = trace[victim]["addr"]
    for j in range(victim, min(ends[victim] + 1, len(trace))):
        if trace[j].get("addr") == a and trace[j]["action"] in ("alloc", "free_requested", "free_completed", "free"):
            trace[j]["size"] += 3 * MiB
    with open(out, "wb") as fh:
        pickle.dump(top, fh, protocol=4)
    earliest = victim
    while earliest > 0 and trace[earliest - 1]["action"] in ("segment_alloc", "segment_map"):
        earliest -= 1
    return victim, earliest


def check_not_identical(name, path):
    with tempfile.TemporaryDirectory() as tmp:
        edited = os.path.join(tmp, "edited.pickle")
        got = one_alloc_larger(path, edited)
        check(name + ": an alloc with a live neighbour within 3 MiB", got is not None)
        if got is None:
            return
        victim, earliest = got
        doc = simulate(edited)
        if doc:
            fid = doc["runs"][0]["fidelity"]
            check(name + " + 3 MiB: not identical", fid["identical"] is False, repr(fid))
            check(name + " + 3 MiB: names the first divergence, not before the edit",
                  fid["first_divergence"] is not None and fid["first_divergence"]["event_index"] is not None and
                  fid["first_divergence"]["event_index"] >= earliest, "%r (edited event %d)" % (fid, victim))
        rc, text, err = run(["simulate", edited])
        check(name + " + 3 MiB: text says it differs", "fidelity: differs from event" in " ".join(text.split()), text)


check_not_identical("frag", snap("frag.pickle"))
top, _ = snapshot_totals.load(snap("frag.pickle"))
trace = top["device_traces"][0]
# The unedited run: every alloc compared, every one where the trace put it.
doc = simulate(snap("frag.pickle"))
if doc:
    fid = doc["runs"][0]["fidelity"]
    n_allocs = sum(1 for e in trace if e["action"] == "alloc")
    check("frag: every alloc compared and matching", fid["allocs_compared"] == n_allocs == fid["allocs_matching"] and
          fid["identical"] is True and fid["first_divergence"] is None, "%r (%d allocs)" % (fid, n_allocs))

# --- device sizes: known or only a lower bound --------------------------------------------------
def first_alloc_after(trace, k):
    return next((i for i in range(k + 1, len(trace)) if trace[i]["action"] == "alloc"), None)


def reserved_after_each(top, dev):
    """Reserved bytes after every event, from the dump's segments with the trace undone."""
    trace = top["device_traces"][dev]
    r = sum(s["total_size"] for s in top["segments"] if s.get("device", 0) == dev)
    out = [0] * len(trace)
    for i in range(len(trace) - 1, -1, -1):
        out[i] = r
        a = trace[i]["action"]
        if a in ("segment_alloc", "segment_map"):
            r -= trace[i]["size"]
        elif a in ("segment_free", "segment_unmap"):
            r += trace[i]["size"]
    return out


# frag.pickle: the size at the OOM is what PyTorch held plus device_free (the truth's); the
# what-if line of analyze never claims a fit above it; the trace ends in the failing step.
top, _ = snapshot_totals.load(snap("frag.pickle"))
known = frag["oom"]["reserved"] + frag["oom"]["device_free"]
rc, out, err = run(["analyze", "--format", "json", snap("frag.pickle")])
w = json.loads(out)["devices"][0]["oom"]["what_if"] if rc == 0 else None
check("analyze frag: the device's size at the OOM", w is not None and w["capacity_bytes"] == known,
      "%r vs %d" % (w, known))
check("analyze frag: a fit holds no more than that size", w is not None and
      (not w["fits"] or w["reserved_at_oom_bytes"] <= w["capacity_bytes"]), repr(w))
doc = simulate(snap("frag.pickle"), "--set", "expandable_segments:True")
if doc:
    oom_at = doc["recorded"]["oom"]["event_index"]
    check("frag: ends in the failing step", doc["ends_at_oom"] is (first_alloc_after(top["device_traces"][0], oom_at)
                                                                    is None), repr(doc["ends_at_oom"]))
    rc, text, err = run(["simulate", snap("frag.pickle")])
    check("frag: says the runs cover only the recorded part of the step",
          "covers only the recorded part of that step" in " ".join(text.split()), text)
doc = simulate(snap("train.pickle"))
check("train: no OOM, does not end in one", doc and doc["ends_at_oom"] is False)

# snapgen frag seed 61 under expandable segments needs 2 MiB more than the recorded run ever held
# before its OOM: a lower bound on the device, so a need, not an OOM.
SNAPGEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "snapgen",
                       "snapgen.py")
if not os.path.exists(SNAPGEN):
    skip("no snapgen at %s: the frag seed 61 need" % SNAPGEN)
else:
    with tempfile.TemporaryDirectory() as tmp:
        f61 = os.path.join(tmp, "frag61.pickle")
        subprocess.run([sys.executable, SNAPGEN, "--scenario", "frag", "--seed", "61", "--steps", "30", "--layers",
                        "5", "-o", f61], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = simulate(f61, "--set", "expandable_segments:True")
        top61, _ = snapshot_totals.load(f61)
        if doc:
            rec_oom = doc["recorded"]["oom"]["event_index"]
            r1 = doc["runs"][1]
            need = r1["needs"]
            check("frag61: the need is reported", need is not None, repr(r1))
            check("frag61: no OOM before the recorded one", r1["oom"] is None or r1["oom"]["event_index"] >= rec_oom,
                  repr(r1["oom"]))
            if need:
                held = reserved_after_each(top61, 0)
                shown = max(held[need["event_index"]:rec_oom + 1])
                check("frag61: shown is what the recorded run held from there to its OOM",
                      need["shown_bytes"] == shown, "%r vs %d" % (need, shown))
                check("frag61: the need is above it", need["reserved_bytes"] > need["shown_bytes"], repr(need))
                check("frag61: before the OOM", need["event_index"] < rec_oom, repr(need))
            rc, text, err = run(["simulate", f61, "--set", "expandable_segments:True"])
            check("frag61: the need in words", need and "needs %s at event %s; the trace only shows the device held" %
                  (human(need["reserved_bytes"]), "{:,}".format(need["event_index"])) in " ".join(text.split()), text)

    # --constant-capacity: one device size throughout, flush-and-retry in the loop, a genuine
    # fragmentation OOM: the recorded OOM is reproduced at its event, identical by every
    # comparison, and a copy with one alloc 3 MiB larger is not identical.
    for seed in (1, 2, 61):
        with tempfile.TemporaryDirectory() as tmp:
            cc = os.path.join(tmp, "cc%d.pickle" % seed)
            subprocess.run([sys.executable, SNAPGEN, "--scenario", "frag", "--constant-capacity", "--seed", str(seed),
                            "-o", cc], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(cc.replace(".pickle", ".truth.json")) as fh:
                cct = json.load(fh)
            doc = simulate(cc)
            if doc:
                r0, rec = doc["runs"][0], doc["recorded"]
                check("constant-capacity seed %d: identical" % seed, r0["fidelity"]["identical"] is True,
                      repr(r0["fidelity"]))
                check("constant-capacity seed %d: the recorded OOM at its event" % seed,
                      r0["oom"] is not None and rec["oom"] is not None and
                      r0["oom"]["event_index"] == rec["oom"]["event_index"] and
                      r0["oom"]["requested_bytes"] == cct["oom"]["requested_rounded"], "%r %r" % (r0["oom"], cct["oom"]))
                check("constant-capacity seed %d: retries as recorded" % seed, r0["retries"] == rec["retries"] > 0,
                      "%r vs %r" % (r0["retries"], rec["retries"]))
            check_not_identical("constant-capacity seed %d" % seed, cc)
    # Expandable segments with max_split_size_mb:64, where a free tail is already larger than a
    # request below 64 MiB: find_expandable_block uses it as it is. On a 1 TiB device no run may
    # run out of memory (the model wrapped around computing what to map and did).
    with tempfile.TemporaryDirectory() as tmp:
        ex = os.path.join(tmp, "expandable.pickle")
        subprocess.run([sys.executable, SNAPGEN, "--scenario", "train", "--expandable", "--seed", "5", "-o", ex],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = simulate(ex, "--capacity", "1TiB", "--set", "max_split_size_mb:64")
        if doc:
            check("expandable + max_split_size_mb:64 at 1 TiB: recorded expandable",
                  doc["recorded"]["settings"]["expandable_segments"] is True)
            for r in doc["runs"]:
                check("expandable + max_split_size_mb:64 at 1 TiB: %s runs" % r["label"], r["oom"] is None,
                      repr(r["oom"]))

# No run on any fixture holds more than --capacity.
for f in fixtures:
    if f.startswith("list"):
        continue
    doc = simulate(snap(f))
    if not doc or not doc["recorded"]["peak_reserved_bytes"]:
        continue
    cap = doc["recorded"]["peak_reserved_bytes"] // 2 // (2 << 20) * (2 << 20) + (2 << 20)
    doc = simulate(snap(f), "--capacity", str(cap), "--set", "expandable_segments:True", "--set",
                   "max_split_size_mb:64")
    for r in doc["runs"] if doc else []:
        check("%s --capacity %d %s: within it" % (f, cap, r["label"]), r["peak_reserved_bytes"] <= cap,
              "%d" % r["peak_reserved_bytes"])

# --capacity 40GB is decimal (40 × 10^9 B), 40G and 40GiB binary; the decimal one says so.
d_gb, d_g = simulate(snap("train.pickle"), "--capacity", "40GB"), simulate(snap("train.pickle"), "--capacity", "40G")
if d_gb and d_g:
    check("40GB is decimal", d_gb["runs"][0]["capacity_bytes"] == 40 * 10**9, repr(d_gb["runs"][0]["capacity_bytes"]))
    check("40G is binary", d_g["runs"][0]["capacity_bytes"] == 40 << 30, repr(d_g["runs"][0]["capacity_bytes"]))
    check("40GB: says which", "decimal" in d_gb["capacity_source"] and "40GiB" in d_gb["capacity_source"],
          d_gb["capacity_source"])
    check("40G: nothing to say", d_g["capacity_source"] == "--capacity", d_g["capacity_source"])

# roundup_power2_divisions' list form, commas and all, in one --set with another setting.
doc = simulate(snap("train.pickle"), "--set", "roundup_power2_divisions:[256:1,512:2],expandable_segments:True")
if doc:
    st = doc["runs"][1]["settings"]
    check("divisions list parsed", st["roundup_power2_divisions"] == [[1 << k, 1] for k in range(9)] + [[512, 2]] and
          st["expandable_segments"] is True, repr(st))
expect_error("divisions list refused", ["simulate", "--set", "roundup_power2_divisions:[256:3]", snap("train.pickle")],
             "--set roundup_power2_divisions:[256:3]: roundup_power2_divisions takes N or a list "
             "[SIZE_MB:N,...,>:N] (SIZE_MB a power of two, N one or 0), not '[256:3]'")

# --- bad input: one line, exit 2 ---------------------------------------------------------------
train = snap("train.pickle")
expect_error("unknown setting", ["simulate", "--set", "foo:1", train],
             "unknown setting 'foo' (known: expandable_segments, max_split_size_mb, roundup_power2_divisions, "
             "garbage_collection_threshold)".join(["--set foo:1: ", ""]))
expect_error("not KEY:VALUE", ["simulate", "--set", "expandable_segments", train],
             "--set expandable_segments: expected KEY:VALUE as in PYTORCH_CUDA_ALLOC_CONF, e.g. "
             "expandable_segments:True")
expect_error("bad number", ["simulate", "--set", "max_split_size_mb:lots", train],
             "--set max_split_size_mb:lots: max_split_size_mb takes a number of MiB, not 'lots'")
expect_error("max_split_size_mb of 20 or less", ["simulate", "--set", "max_split_size_mb:20", train],
             "--set max_split_size_mb:20: max_split_size_mb must be more than 20, as PyTorch requires, not '20'")
expect_error("bad threshold", ["simulate", "--set", "garbage_collection_threshold:1.5", train],
             "--set garbage_collection_threshold:1.5: garbage_collection_threshold takes a number between 0 and 1 "
             "(exclusive), not '1.5'")
for bad in ("-5", "0", "lots", "99999999TB"):
    expect_error("capacity " + bad, ["simulate", "--capacity", bad, train],
                 "--capacity: not a device size: '%s' (e.g. 40GB, 38GiB)" % bad)
expect_error("capacity below one segment", ["simulate", "--capacity", "1000", train],
             "--capacity 1000 B: smaller than one 2 MiB segment")
expect_error("no trace", ["simulate", snap("list.pickle")],
             "the snapshot has no trace to simulate (record it with _record_memory_history)")

# --- text: 80 columns, the verdict in words ------------------------------------------------------
rc, text, err = run(["simulate", snap("frag.pickle"), "--set", "expandable_segments:True",
                     "--set", "max_split_size_mb:64", "--set", "garbage_collection_threshold:0.8", "--min-capacity"])
check("text: runs", rc == 0, err)
check("text: 80 columns", max(len(l) for l in text.splitlines()) <= 80,
      [l for l in text.splitlines() if len(l) > 80])
check("text: fidelity stated", "fidelity: identical: " in text and "12 of 12 segment sizes in order" in
      " ".join(text.split()), text)
check("text: gc threshold needs a memory fraction", "garbage_collection_threshold changes nothing here" in text and
      "set_per_process_memory_fraction" in " ".join(text.split()), text)

# --- explicit empty_cache() is never a retry ----------------------------------------------------
# snapgen --empty-cache-each-step: every flush is the program's call (its stack ends in
# torch.cuda.memory.empty_cache), none a retry; the truth gives the calls per device.
with open(snap("empty_cache.truth.json")) as fh:
    ect = json.load(fh)
doc = simulate(snap("empty_cache.pickle"))
if doc:
    calls = ect["empty_cache"]["calls_per_device"]
    check("empty_cache: each call named as such", doc["explicit_empty_cache"] == calls,
          "%r vs %d" % (doc["explicit_empty_cache"], calls))
    check("empty_cache: zero retries", doc["recorded"]["retries"] == 0 and doc["runs"][0]["retries"] == 0,
          "%r %r" % (doc["recorded"]["retries"], doc["runs"][0]["retries"]))
# MercuryB1-like: after every explicit call the next request maps a new segment (the cache was
# just emptied), which reads like a flush-and-retry by its actions alone. Built here from the
# fixture: after each burst but the last, a 20 MiB segment of its own and a 20 MiB alloc in it,
# live until just before the next call, which frees that segment too.
top, _ = snapshot_totals.load(snap("empty_cache.pickle"))
tr = top["device_traces"][0]
bursts = []
for i, e in enumerate(tr):
    if e["action"] == "segment_free" and (i == 0 or tr[i - 1]["action"] != "segment_free"):
        bursts.append(i)
base = 0x7e0000000000
edited, inserted = [], 0
for i, e in enumerate(tr):
    k = bursts.index(i) if i in bursts else None
    if k is not None and k > 0:  # the next call frees the segment made after the previous one
        a = base + (k - 1) * (32 << 20)
        edited.append(dict(e, action="free_requested", addr=a, size=20 << 20))
        edited.append(dict(e, action="free_completed", addr=a, size=20 << 20))
        edited.append(dict(e, addr=a, size=20 << 20))
    edited.append(e)
    last_of_burst = e["action"] == "segment_free" and (i + 1 == len(tr) or tr[i + 1]["action"] != "segment_free")
    if last_of_burst and bursts and i >= bursts[0] and len([b for b in bursts if b <= i]) < len(bursts):
        k = len([b for b in bursts if b <= i]) - 1
        a = base + k * (32 << 20)
        nxt = next(x for x in tr[i + 1:] if x["action"] == "alloc")
        edited.append(dict(nxt, action="segment_alloc", addr=a, size=20 << 20))
        edited.append(dict(nxt, action="alloc", addr=a, size=20 << 20))
        inserted += 1
top["device_traces"][0] = edited
check("mercury-like: segments inserted", inserted == len(bursts) - 1 >= 3, "%d of %d" % (inserted, len(bursts)))
with tempfile.TemporaryDirectory() as tmp:
    merc = os.path.join(tmp, "mercury_like.pickle")
    with open(merc, "wb") as fh:
        pickle.dump(top, fh, protocol=4)
    doc = simulate(merc, "--device", "0")
    if doc:
        check("mercury-like: zero retries", doc["recorded"]["retries"] == 0 and doc["runs"][0]["retries"] == 0,
              "%r %r" % (doc["recorded"]["retries"], doc["runs"][0]["retries"]))
        check("mercury-like: each call named as such", doc["explicit_empty_cache"] == len(bursts),
              "%r vs %d" % (doc["explicit_empty_cache"], len(bursts)))
        check("mercury-like: as recorded reproduces it", doc["runs"][0]["fidelity"]["identical"] is True,
              repr(doc["runs"][0]["fidelity"]))

finish()
