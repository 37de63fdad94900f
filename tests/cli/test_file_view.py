#!/usr/bin/env python3
# `analyze --file PATH` and `diff --file PATH` (issue 51, part 4) against two independent
# derivations, on the snapgen fixtures and every real snapshot:
# - the folded stacks of `memsnap flame --at dump|peak --device N`: a line's bytes are the sum of
#   the folded lines with a frame `function (FILE:LINE)` of a matching file, once per line;
# - the pickle itself, read by the oracle's restricted unpickler: the active_allocated blocks'
#   frames (at the dump) and the trace's alloc events (allocated over the trace), for files of
#   the user's code, whose frames no filter removes.
# Then how PATH matches (a suffix of path components, absolute, no partial component), the
# one-line error with the closest names, and diff --file against analyze --file of each side.
import json
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
from clitest import check, finish, run, skip  # noqa: E402
from snapshot_totals import load  # noqa: E402

TESTDATA = sys.argv[2]
REALDATA = sys.argv[3] if len(sys.argv) > 3 else ""


def components(p):
    return [c for c in p.split("/") if c and c != "."]


def matches(path, query):
    want, have = components(query), components(path)
    if not want or len(want) > len(have):
        return False
    if query.startswith("/") and (not path.startswith("/") or len(want) != len(have)):
        return False
    return have[-len(want):] == want


def display(path):
    """The path as folded stacks show it (report/frame_label.cpp's display_path)."""
    for marker in ("site-packages/", "site-packages\\", "dist-packages/", "dist-packages\\"):
        at = path.rfind(marker)
        if at >= 0 and at + len(marker) < len(path):
            return path[at + len(marker):]
    m = re.search(r"lib/python[0-9.]+/(.+)", path)
    return m.group(1) if m and re.match(r"lib/python[0-9.]+/", path[m.start():]) else path


def frame_location(label):
    """(path, line) of a folded frame `function (path:line)`, or None for a pseudo-frame."""
    if not label.endswith(")") or " (" not in label:
        return None
    inner = label[label.rfind(" (") + 2:-1]
    m = re.match(r"^(.*):(\d+)$", inner)
    return (m.group(1), int(m.group(2))) if m else (inner, 0)


def folded_by_line(text, query):
    """{(display path, line): bytes} from folded stacks, each stack once per line."""
    out = defaultdict(int)
    total = 0
    for row in text.splitlines():
        stack, _, count = row.rpartition(" ")
        keys = set()
        for frame in stack.split(";"):
            loc = frame_location(frame)
            if loc and matches(loc[0], query):
                keys.add(loc)
        for k in keys:
            out[k] += int(count)
        total += int(count) if keys else 0
    return dict(out), total


def view_by_line(device, field, key=display):
    """{(path, line): bytes} of the view; files that show alike (display paths) add up, as in folded stacks."""
    out = defaultdict(int)
    for l in device["lines"]:
        if l[field]:
            out[(key(l["file"]), l["line"])] += l[field]
    return dict(out)


def analyze_file(path, query, *more):
    rc, out, err = run(["analyze", "--format", "json", "--file", query, path, *more])
    return rc, (json.loads(out) if rc == 0 else None), err


def against_folded(path, query):
    """The view's dump and peak bytes per line equal the folded stacks'; its totals too."""
    rc, doc, err = analyze_file(path, query)
    name = "%s --file %s" % (os.path.basename(path), query)
    check(name + ": answered", rc == 0, err)
    if rc != 0:
        return None
    for d in doc["devices"]:
        for at, field in (("dump", "at_dump_bytes"), ("peak", "at_peak_bytes")):
            if at == "peak" and d["peak_event_index"] is None:
                check(name + ": no peak, no peak bytes", all(l["at_peak_bytes"] == 0 for l in d["lines"]))
                continue
            rc, folded, err = run(["flame", "--format", "folded", "--at", at, "--device", str(d["device"]), path])
            check(name + ": flame --at " + at, rc == 0, err)
            want, total = folded_by_line(folded, query)
            got = view_by_line(d, field)
            check("%s: device %d at the %s, by line, equals the folded stacks" % (name, d["device"], at), got == want,
                  "%s vs %s" % (sorted(got.items())[:6], sorted(want.items())[:6]))
            check("%s: device %d at the %s, the file's total" % (name, d["device"], at), d["total"][field] == total,
                  "%d vs %d" % (d["total"][field], total))
    return doc


def frames_key(frames, query):
    return {(f.get("filename", ""), int(f.get("line") or 0)) for f in frames or []
            if isinstance(f, dict) and matches(f.get("filename", ""), query)}


def against_pickle(path, query, doc):
    """At the dump and over the trace, from the pickle's own frames (user files: nothing filters them)."""
    obj, _ = load(path)
    if not isinstance(obj, dict) or doc["input"]["legacy_history"]:
        return
    name = "%s --file %s (pickle)" % (os.path.basename(path), query)
    dump, allocated = defaultdict(lambda: defaultdict(int)), defaultdict(lambda: defaultdict(int))
    for seg in obj.get("segments", []):
        for b in seg.get("blocks", []):
            if b.get("state") == "active_allocated":
                for k in frames_key(b.get("frames"), query):
                    dump[seg.get("device", 0)][k] += b["size"]
    for dev, trace in enumerate(obj.get("device_traces", [])):
        for e in trace:
            if e.get("action") == "alloc":
                for k in frames_key(e.get("frames"), query):
                    allocated[dev][k] += e["size"]
    for d in doc["devices"]:
        got = view_by_line(d, "at_dump_bytes", key=str)
        check("%s: device %d at the dump" % (name, d["device"]), got == dict(dump[d["device"]]),
              "%s vs %s" % (sorted(got.items())[:5], sorted(dump[d["device"]].items())[:5]))
        got = view_by_line(d, "allocated_bytes", key=str)
        check("%s: device %d allocated over the trace" % (name, d["device"]), got == dict(allocated[d["device"]]),
              "%s vs %s" % (sorted(got.items())[:5], sorted(allocated[d["device"]].items())[:5]))


def user_file(path):
    """The user file most bytes pass through at the dump, by the folded stacks (None if none)."""
    rc, folded, _ = run(["flame", "--format", "folded", path])
    weight = defaultdict(int)
    for row in folded.splitlines():
        stack, _, count = row.rpartition(" ")
        for frame in set(stack.split(";")):
            loc = frame_location(frame)
            if loc and loc[0].endswith(".py") and "torch/" not in loc[0] and loc[1] > 0 and "/" in loc[0]:
                weight[loc[0]] += int(count)
    return max(weight, key=weight.get) if weight else None


snapgen = os.path.join(TESTDATA, "snapgen")
frag = os.path.join(snapgen, "frag.pickle")
for f in ("frag.pickle", "leak.pickle", "devices2.pickle", "expandable.pickle", "cpp.pickle", "ring_start.pickle",
          "model_per_step.pickle", "inference.pickle"):
    path = os.path.join(snapgen, f)
    for query in ("train.py", "workspace/train.py", "/workspace/train.py"):
        doc = against_folded(path, query)
        if doc:
            against_pickle(path, query, doc)
doc = against_folded(frag, "linear.py")  # a library file: through the folded stacks only

# How PATH matches: by whole components; what matched is named.
rc, doc, err = analyze_file(frag, "train.py")
check("matched files named", rc == 0 and doc["matched_files"] and all(matches(f, "train.py") for f in doc["matched_files"]),
      doc and doc["matched_files"])
rc, out, err = run(["analyze", "--file", "rain.py", frag])
check("a part of a component does not match: exit 2", rc == 2 and out == "", (rc, err))
check("no match: one line naming the closest files", err.count("\n") == 1 and "no frame's file ends in it" in err and
      "train.py" in err, err)
rc, out, err = run(["analyze", "--file", "train.py", "--at", "100", frag])
check("--file with --at: refused", rc == 2 and "--file" in err, err)
rc, out, err = run(["analyze", "--file", "train.py", os.path.join(snapgen, "nostacks.pickle")])
check("a file without stacks: says so", rc == 2 and "no stacks" in err, err)
rc, out, err = run(["analyze", "--file", "train.py", frag])
check("text: 80 columns", rc == 0 and all(len(l) <= 80 for l in out.splitlines()), out)
check("text: a table with line numbers", re.search(r"^\s+\d+\s+\S+ \S+\s+\S+ \S+\s+\S+ \S+\s+\w", out, re.M), out)

# diff --file: each side is analyze --file of that side.
a, b = os.path.join(snapgen, "leak.step4.pickle"), os.path.join(snapgen, "leak.step10.pickle")
rc, out, err = run(["diff", "--format", "json", "--file", "train.py", a, b])
check("diff --file answered", rc == 0, err)
if rc == 0:
    diff = json.loads(out)
    for side, path in (("before", a), ("after", b)):
        _, one, _ = analyze_file(path, "train.py")
        for d in diff["devices"]:
            want = next(x for x in one["devices"] if x["device"] == d["device"])
            check("diff --file %s: device %d equals analyze --file" % (side, d["device"]), d[side] == want)
            got = {(l["file"], l["line"]): l[side]["at_dump_bytes"] for l in d["lines"] if l[side]["at_dump_bytes"]}
            check("diff --file %s: lines" % side, got == {(l["file"], l["line"]): l["at_dump_bytes"]
                                                          for l in want["lines"] if l["at_dump_bytes"]})
rc, out, err = run(["diff", "--file", "train.py", a, b])
check("diff --file text: 80 columns", rc == 0 and all(len(l) <= 80 for l in out.splitlines()), out)

# Every real snapshot: its heaviest user file, against the folded stacks and the pickle.
real = sorted(os.path.join(REALDATA, f) for f in os.listdir(REALDATA)) if REALDATA and os.path.isdir(REALDATA) else []
real = [f for f in real if re.search(r"\.(pickle|pkl|json)(\.gz|\.zst)?$", f)]
if not real:
    skip("the real snapshots (%s) are absent: fixtures only" % REALDATA)
done = 0
for path in real:
    f = user_file(path)
    if not f:
        continue
    query = "/".join(components(f)[-2:])
    doc = against_folded(path, query)
    if doc:
        against_pickle(path, query, doc)
        done += 1
if real:
    check("real snapshots with a user file checked", done >= 3, done)
    print("%d real snapshots checked" % done)
finish()
