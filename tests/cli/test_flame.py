#!/usr/bin/env python3
# `memsnap flame`, `memsnap callgraph` and `diff --flame` through the built binary: byte sums
# against the snapshot's own totals, dominator invariants, SVG and DOT well-formed, hostile text.
import glob
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from clitest import TESTDATA, check, expect_error, finish, run, skip, snap

REALDATA = sys.argv[3] if len(sys.argv) > 3 else ""
SVG = "{http://www.w3.org/2000/svg}"
CHAR_W = 11 * 0.61  # the flame graph's monospace advance (src/report/flame.cpp)


def folded_sum(text, columns=1):
    """Σ of the last column (or of the last two, per column) of folded lines."""
    sums = [0] * columns
    for line in text.splitlines():
        parts = line.rsplit(" ", columns)
        for i in range(columns):
            sums[i] += int(parts[1 + i])
    return sums if columns > 1 else sums[0]


def totals(path, at=None):
    args = ["analyze", "--format", "json", path] + (["--at", str(at)] if at is not None else [])
    rc, out, err = run(args)
    check("analyze %s" % args, rc == 0, err)
    return {d["device"]: d for d in json.loads(out)["devices"]} if rc == 0 else {}


def expected(dev, state):
    t = dev["totals"]
    return {"allocated": t["allocated_bytes"], "active": t["active_bytes"],
            "all": t["active_bytes"] + t["inactive_bytes"]}[state]


def check_graph(name, doc, want_bytes):
    v = doc["vertices"]
    check(name + " bytes", doc["bytes"] == want_bytes, (doc["bytes"], want_bytes))
    check(name + " root", v[0]["kind"] == "root" and v[0]["dominator"] is None, v[0])
    check(name + " retained(root) = bytes", v[0]["retained_bytes"] == want_bytes and v[0]["total_bytes"] == want_bytes,
          v[0])
    check(name + " Σ self", sum(x["self_bytes"] for x in v) == want_bytes)
    for x in v:
        if not x["total_bytes"] >= x["retained_bytes"] >= x["self_bytes"]:
            check(name + " total >= retained >= self", False, x)
            break
        if x["id"] and x["dominator"] is None:
            check(name + " every frame has a dominator", False, x)
            break
    for e in doc["edges"]:
        if e["bytes"] > v[e["to"]]["total_bytes"]:
            check(name + " edge <= callee total", False, e)
            break


def check_svg(name, text, script=False):
    check(name + " script", ("<script" in text) == script)
    check(name + " no external reference", "href" not in text and "url(" not in text)
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as e:
        check(name + " well-formed", False, str(e))
        return None
    frames = [g for g in root.iter(SVG + "g") if g.get("class") == "f"]
    check(name + " frames", len(frames) > 0)
    for g in frames:
        title, rect, label = g.find(SVG + "title"), g.find(SVG + "rect"), g.find(SVG + "text")
        if title is None or not title.text or rect is None:
            check(name + " every frame has a title and a box", False, ET.tostring(g)[:200])
            break
        if label is not None and label.text:
            if len(label.text) * CHAR_W + 3 > float(rect.get("width")) + 0.01:
                check(name + " labels fit their box", False, (label.text, rect.get("width")))
                break
    return root


# ---- every fixture: folded sums and the call graph against the snapshot's own totals ------------
fixtures = sorted(glob.glob(os.path.join(TESTDATA, "snapgen", "*.pickle")))
check("fixtures found", len(fixtures) > 5, fixtures)
# Every state on a few fixtures (the unit tests cover every state of every fixture in-process).
EVERY_STATE = ("frag.pickle", "streams2.pickle", "devices2.pickle", "cpp.pickle", "expandable_leak.pickle")
for path in fixtures:
    base = os.path.basename(path)
    devs = totals(path)
    for state in ("allocated", "active", "all") if base in EVERY_STATE else ("allocated",):
        want = sum(expected(d, state) for d in devs.values())
        rc, out, err = run(["flame", "--state", state, path])
        check("%s flame --state %s" % (base, state), rc == 0 and err == "", err)
        check("%s flame --state %s: Σ = %s" % (base, state, state), folded_sum(out) == want, (folded_sum(out), want))
        lines = out.splitlines()
        check("%s sorted, one line per stack" % base, lines == sorted(set(lines)))
        if len(devs) > 1:
            check("%s <device N> roots" % base, all(l.startswith("<device ") for l in lines), lines[:2])
        rc, out, err = run(["callgraph", "--format", "json", "--state", state, path])
        check("%s callgraph json" % base, rc == 0, err)
        if rc == 0:
            check_graph("%s callgraph --state %s" % (base, state), json.loads(out), want)
    rc, out, err = run(["callgraph", path], env={"COLUMNS": "80"})
    check(base + " callgraph text", rc == 0 and out.startswith("memsnap "), err)
    for line in out.splitlines():
        if len(line) > 80:
            check(base + " callgraph text fits 80 columns", False, line)
            break

# --at peak / INDEX: the replayed state's own totals (as analyze --at reports them).
for base in ("frag.pickle", "leak.pickle", "devices2.pickle"):
    path = snap(base)
    devs = totals(path)
    rc, out, err = run(["callgraph", "--format", "json", "--at", "peak", path])
    check(base + " --at peak", rc == 0, err)
    doc = json.loads(out)
    for point in doc["states"]:
        check(base + " peak event = analyze's", point["at"] == "peak" and
              point["event_index"] == devs[point["device"]]["peak"]["event_index"], (point, devs[point["device"]]["peak"]))
    if len(doc["states"]) == 1:
        idx = doc["states"][0]["event_index"]
        at = totals(path, idx)
        check_graph(base + " --at peak", doc, at[0]["totals"]["allocated_bytes"])
        rc, out, err = run(["flame", "--at", str(idx), path])
        check(base + " --at INDEX = --at peak", folded_sum(out) == at[0]["totals"]["allocated_bytes"])
rc, out, err = run(["flame", "--at", "oom", snap("frag.pickle")])
check("--at oom", rc == 0 and folded_sum(out) > 0, err)

# ---- SVG --------------------------------------------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    out_svg = os.path.join(tmp, "flame.svg")
    rc, so, se = run(["flame", snap("frag.pickle"), "-o", out_svg])
    check("svg exit", rc == 0 and so == "", se)
    check("svg stderr", se.startswith("wrote " + out_svg + " (") and se.count("\n") == 1, se)
    with open(out_svg, encoding="utf-8") as f:
        root = check_svg("svg", f.read())
    if root is not None:
        titles = [t.text for t in root.iter(SVG + "title")]
        check("svg root tooltip", any(t.startswith("all: 42.64 MiB allocated") for t in titles), titles[:3])
        check("svg share in tooltips", any("% of 42.64 MiB allocated" in t for t in titles), titles[:3])
    rc, so, se = run(["flame", "--js", "--format", "svg", snap("devices2.pickle")])
    check("svg --js to stdout", rc == 0 and se == "", se)
    check_svg("svg --js", so, script=True)
    rc, so, se = run(["flame", "--cpp", "--state", "all", "--width", "600", "-o", "-", "--format", "svg",
                      snap("cpp.pickle")])
    check_svg("svg --cpp --state all", so)

    # diff --flame: flamegraph.pl's two-count lines; the SVG colours growth.
    a, b = snap("leak.step4.pickle"), snap("leak.step10.pickle")
    rc, out, err = run(["diff", "--flame", a, b])
    check("diff --flame", rc == 0 and err == "", err)
    before, after = folded_sum(out, 2)
    check("diff --flame before = allocated", before == totals(a)[0]["totals"]["allocated_bytes"], before)
    check("diff --flame after = allocated", after == totals(b)[0]["totals"]["allocated_bytes"], after)
    out_svg = os.path.join(tmp, "diff.svg")
    rc, so, se = run(["diff", "--flame", a, b, "-o", out_svg])
    check("diff --flame svg", rc == 0 and so == "" and se.startswith("wrote "), se)
    with open(out_svg, encoding="utf-8") as f:
        text = f.read()
    check_svg("diff svg", text)
    check("diff svg says before and after", "before " in text and "after " in text)

# ---- DOT --------------------------------------------------------------------------------------
rc, dot_text, err = run(["callgraph", "--dot", "--min-share", "0.5%", snap("frag.pickle")])
check("--dot", rc == 0 and dot_text.startswith("digraph G {"), err)
if shutil.which("dot"):
    for name, args in (("frag", [snap("frag.pickle")]), ("cpp", ["--cpp", "--by-function", snap("cpp.pickle")])):
        rc, text, err = run(["callgraph", "--dot"] + args)
        p = subprocess.run(["dot", "-Tsvg"], input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check("dot -Tsvg accepts %s" % name, p.returncode == 0 and b"<svg" in p.stdout, p.stderr[:300])
else:
    skip("dot -Tsvg check: Graphviz 'dot' is not installed (apt-get install graphviz)")

# ---- hostile strings: every format keeps them inert --------------------------------------------
EVIL = ["\x1b[31mred\x1b[0m;semi\"quote'<script>&amp;\n\tnewline", "\u202egnp.exe", "x" * 100000, "\x9b31m c1",
        "ends with a number 42"]
frames = [{"filename": "/home/u/%s.py" % EVIL[i % len(EVIL)], "line": i + 1, "name": EVIL[i % len(EVIL)]}
          for i in range(len(EVIL))]
hostile = {"segments": [{"device": 0, "address": 0x7f0000000000, "total_size": 4 << 20, "allocated_size": 3 << 20,
                         "active_size": 3 << 20, "stream": 0, "segment_type": "large",
                         "blocks": [{"size": 1 << 20, "state": "active_allocated", "requested_size": 1 << 20,
                                     "frames": frames},
                                    {"size": 1 << 20, "state": "active_allocated", "requested_size": 1 << 20,
                                     "frames": frames[2:]},
                                    {"size": 1 << 20, "state": "active_allocated", "requested_size": 1 << 20,
                                     "frames": frames[4:]},
                                    {"size": 1 << 20, "state": "inactive", "requested_size": 0, "frames": []}]}],
           "device_traces": [[]]}
with tempfile.TemporaryDirectory() as tmp:
    evil = os.path.join(tmp, "evil.pickle")
    with open(evil, "wb") as f:
        pickle.dump(hostile, f, protocol=4)

    def inert_text(name, text):
        check(name + " no control characters",
              not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f or c == "\u202e" for c in text),
              [c for c in text if ord(c) < 32 and c != "\n"][:5])
        check(name + " capped", max(len(l) for l in text.splitlines()) < 5000)

    rc, out, err = run(["flame", evil])
    check("hostile flame", rc == 0, err)
    inert_text("hostile folded", out)
    check("hostile folded: 3 lines of 2 fields", all(len(l.rsplit(" ", 1)) == 2 and l.rsplit(" ", 1)[1].isdigit()
                                                     for l in out.splitlines()) and len(out.splitlines()) == 3, out[:500])
    check("hostile folded: ';' escaped", "\\x3b" in out and all(l.count(";") <= 4 for l in out.splitlines()))
    check("hostile folded: a trailing number is not a count", "number\\x2042" in out or "number 42 (" in out, out[:300])
    check("hostile folded: Σ", folded_sum(out) == 3 << 20)
    rc, out, err = run(["callgraph", evil], env={"COLUMNS": "80"})
    check("hostile callgraph", rc == 0, err)
    inert_text("hostile callgraph text", out)
    rc, out, err = run(["callgraph", "--format", "json", evil])
    check("hostile json parses", rc == 0 and json.loads(out)["bytes"] == 3 << 20, err)
    rc, out, err = run(["callgraph", "--dot", evil])
    inert_text("hostile dot", out)
    if shutil.which("dot"):
        p = subprocess.run(["dot", "-Tsvg"], input=out.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check("dot -Tsvg accepts hostile labels", p.returncode == 0, p.stderr[:300])
    for args in ([], ["--js"]):
        rc, out, err = run(["flame", "--format", "svg", "--state", "all", evil] + args)
        check("hostile svg", rc == 0, err)
        check_svg("hostile svg %s" % args, out, script=bool(args))
        check("hostile svg: no injected element", "<script>&" not in out and out.count("<script") == len(args))

# ---- errors -----------------------------------------------------------------------------------
expect_error("--at peak without a trace", ["flame", "--at", "peak", snap("list.pickle")],
             snap("list.pickle") + ": device 0 has no trace entries (recorded without history): no peak to rebuild")
expect_error("--at oom without an oom", ["callgraph", "--at", "oom", snap("train.pickle")],
             snap("train.pickle") + ": device 0 has no out-of-memory event in its trace")
expect_error("--at bad", ["flame", "--at", "top", snap("train.pickle")],
             "--at: expected dump, peak, oom or a trace event index, got 'top'")
expect_error("--at out of range", ["flame", "--at", "100000", snap("train.pickle")],
             "--at 100000: device 0 has 255 trace entries (valid indices 0 to 254)")
expect_error("--device", ["callgraph", "--device", "3", snap("train.pickle")],
             "--device 3: the snapshot has no such device")
expect_error("--min-share", ["callgraph", "--min-share", "200%", snap("train.pickle")],
             "--min-share: expected a percentage from 0 to 100 (e.g. 1% or 0.5%), got '200%'")
expect_error("diff --flame with json", ["diff", "--flame", "--format", "json", snap("leak.step4.pickle"),
                                        snap("leak.step10.pickle")], "--flame and --format json: choose one")
expect_error("diff -o without --flame", ["diff", "-o", "x.svg", snap("leak.step4.pickle"), snap("leak.step10.pickle")],
             "-o: only with --flame")
expect_error("--dot with json", ["callgraph", "--dot", "--format", "json", snap("train.pickle")],
             "--dot and --format json: choose one")

# ---- real snapshots (never copied into the project) ---------------------------------------------
real = sorted(glob.glob(os.path.join(REALDATA, "*.pickle")) + glob.glob(os.path.join(REALDATA, "*.pkl")) +
              glob.glob(os.path.join(REALDATA, "*.json"))) if REALDATA and os.path.isdir(REALDATA) else []
if not real:
    skip("real snapshots: %r is absent" % REALDATA)
for path in real:
    base = os.path.basename(path)
    devs = totals(path)
    want = sum(expected(d, "allocated") for d in devs.values())
    rc, out, err = run(["flame", path])
    check(base + " flame Σ = allocated", rc == 0 and folded_sum(out) == want, (err, want))
    rc, out, err = run(["callgraph", "--format", "json", "--cpp", path])
    if rc == 0:
        check_graph(base + " callgraph --cpp", json.loads(out), want)
    else:
        check(base + " callgraph", False, err)

# The SVG subtitle fits its line and keeps what and how much: a long path gives way first
# (its directories, then the middle of its base name), never the figures at its end.
with tempfile.TemporaryDirectory() as tmp:
    deep = os.path.join(tmp, "a_rather_long_directory_name_for_experiments", "run_2026_11_27_batch_256_seq_1024",
                        "checkpoints_and_memory_snapshots")
    os.makedirs(deep)
    path = os.path.join(deep, "very_long_memory_snapshot_file_name_from_a_training_job.pickle")
    shutil.copy(snap("leak.pickle"), path)
    width = 600
    out_svg = os.path.join(tmp, "f.svg")
    rc, out, err = run(["flame", "--width", str(width), "-o", out_svg, path])
    rc2, folded, _ = run(["flame", path])
    total = folded_sum(folded)
    lines = [t for t in ET.parse(out_svg).getroot().iter(SVG + "text") if t.get("y") == "40"] if rc == 0 else []
    sub = lines[0].text if lines else ""
    room = int((width - 20) / CHAR_W)
    head, _, rest = sub.partition(": ")
    check("flame subtitle fits its line", 0 < len(sub) <= room, "%d > %d: %r" % (len(sub), room, sub))
    check("flame subtitle: the path cut in the middle", "\u2026" in head and head.split("\u2026")[0] in path
          and head.split("\u2026")[-1] != "" and path.endswith(head.split("\u2026")[-1]), sub)
    mib = "%.2f MiB" % (total / (1 << 20))
    check("flame subtitle: bytes and blocks whole", rest.endswith(", %s in " % mib + rest.rsplit(" in ", 1)[-1]) and
          rest.rsplit(" in ", 1)[-1].split()[-1] in ("block", "blocks"), "%r (%s)" % (sub, mib))

finish()
