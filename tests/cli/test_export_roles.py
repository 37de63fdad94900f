#!/usr/bin/env python3
# Issue 54: `memsnap export` carries each block's role. Every active block of the exported
# snapshot (pickle and JSON) has a `role` key, analyze's role name for it, and a `phase` key
# exactly when the trace holds the block's alloc (read here from the original pickle: an alloc
# at its address after the last free there); a free block has neither. The bytes of the
# allocated blocks summed by `role` equal analyze's totals.by_role, device by device, on every
# fixture of testdata/snapgen and testdata/roles and on real files of ../shared/realdata (skipped
# without it); with --role NAME=GLOB the user's role is in both; a window's export is
# self-consistent (its roles are analyze's of the exported file); a bad --role is a usage error.
import json
import os
import pickle
import sys
import tempfile

from clitest import TESTDATA, check, expect_error, finish, run, skip, snap

REAL = sys.argv[3] if len(sys.argv) > 3 else None
PHASES = {"forward", "backward", "optimizer_step", "zero_grad", "data_loading", "other"}


def analyze(path, *extra):
    rc, out, err = run(["analyze", "--format", "json", path] + list(extra), timeout=600)
    check("analyze %s" % os.path.basename(path), rc == 0, err[:300])
    return json.loads(out) if rc == 0 else None


def export(path, out_path, *extra):
    rc, out, err = run(["export", path, "-o", out_path, "--quiet"] + list(extra), timeout=600)
    check("export %s" % os.path.basename(path), rc == 0, err[:300])
    if rc != 0:
        return None
    if out_path.endswith(".json"):
        with open(out_path) as fh:
            return json.load(fh)
    with open(out_path, "rb") as fh:
        return pickle.load(fh)


def by_role(doc, device):
    out = {}
    for s in doc["segments"]:
        if s["device"] != device:
            continue
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                out[b["role"]] = out.get(b["role"], 0) + b["size"]
    return out


def traced_allocs(original, device):
    """Addresses of blocks the device's trace allocates and never completes freeing (a pending free included):
    the dumped block there was allocated in the window."""
    traces = original.get("device_traces", []) if isinstance(original, dict) else []
    open_at = {}
    for e in traces[device] if device < len(traces) else []:
        if e.get("action") == "alloc":
            open_at[e["addr"]] = True
        elif e.get("action") in ("free_completed", "free"):
            open_at[e["addr"]] = False
    return {a for a, alive in open_at.items() if alive}


def compare(name, path, doc, analysis, original=None):
    for d in analysis["devices"]:
        want = {r: n for r, n in d["totals"]["by_role"].items() if n}
        got = by_role(doc, d["device"])
        check(name + ": device %d bytes by role = analyze's totals.by_role" % d["device"], got == want,
              "export %r, analyze %r" % (got, want))
        if original is None:
            continue
        traced = traced_allocs(original, d["device"])
        for s in doc["segments"]:
            if s["device"] != d["device"]:
                continue
            for b in s["blocks"]:
                active = b["state"] != "inactive"
                check(name + ": role on active blocks only", ("role" in b) == active, repr(b)[:200])
                want_phase = active and b["address"] in traced
                check(name + ": phase where the trace holds the alloc", ("phase" in b) == want_phase and
                      b.get("phase", "forward") in PHASES, "%r (traced %s)" % (repr(b)[:200], want_phase))


def manifest(folder):
    with open(os.path.join(TESTDATA, folder, "MANIFEST.tsv")) as fh:
        return [os.path.join(TESTDATA, folder, line.split("\t")[0]) for line in fh if line.strip()]


with tempfile.TemporaryDirectory() as tmp:
    out_p, out_j = os.path.join(tmp, "x.pickle"), os.path.join(tmp, "x.json")
    fixtures = manifest("snapgen") + manifest("roles")
    for extra in ("kv_cache", "autocast", "autocast_eval"):
        fixtures += [os.path.join(TESTDATA, "roles", f) for f in sorted(os.listdir(os.path.join(TESTDATA, "roles")))
                     if f.startswith(extra) and f.endswith(".pickle") and os.path.join(TESTDATA, "roles", f)
                     not in fixtures]
    compared = 0
    for path in fixtures:
        name = os.path.basename(path)
        analysis = analyze(path)
        doc = export(path, out_p)
        if not analysis or not doc:
            continue
        original = None
        if path.endswith(".pickle"):
            with open(path, "rb") as fh:
                original = pickle.load(fh)
        compare(name, path, doc, analysis, original)
        as_json = export(path, out_j)
        if as_json:
            compare(name + " json", path, as_json, analysis)
        compared += 1
    check("fixtures compared", compared >= 40, "only %d" % compared)

    # A user's role: in analyze's by_role and on the exported blocks alike.
    path = snap("train.pickle")
    analysis = analyze(path, "--role", "mine=build_model")
    doc = export(path, out_p, "--role", "mine=build_model")
    if analysis and doc:
        compare("train --role mine", path, doc, analysis)
        check("train --role mine: the weights built in build_model are mine",
              by_role(doc, 0).get("mine", 0) > 0 and "parameter" not in by_role(doc, 0), repr(by_role(doc, 0)))
    # A window's export: its roles are analyze's of the file written.
    for fixture in ("leak.pickle", "frag.pickle"):
        doc = export(snap(fixture), out_p, "--last", "200")
        analysis = analyze(out_p)
        if doc and analysis:
            compare(fixture + " --last 200", out_p, doc, analysis)
    expect_error("bad --role", ["export", snap("train.pickle"), "-o", out_p, "--role", "mine"],
                 "--role 'mine': expected NAME=GLOB (for example mine='*my_model.py:*')")

    # Real files: the bytes by role of the export are analyze's.
    if not REAL or not os.path.isdir(REAL):
        skip("no real data at %s: export roles on real files not checked" % REAL)
    else:
        for name in ("notHanmin__assignment2-systems__memory_snapshot.pickle",
                     "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle",
                     "kkaitlyn111__cs336-a2-systems__memory_snapshot.pickle",
                     "Nesta-gitU__discrete_diffusion__memory_snapshot.json"):
            path = os.path.join(REAL, name)
            analysis = analyze(path)
            doc = export(path, out_p)
            if analysis and doc:
                original = None
                if name.endswith(".pickle"):
                    with open(path, "rb") as fh:
                        original = pickle.load(fh)
                compare(name, path, doc, analysis, original)
finish()
