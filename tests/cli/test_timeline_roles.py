#!/usr/bin/env python3
# Issue 54: `timeline --by-role` stacks the live bytes of each role under the curve.
# On snapgen's training runs (testdata/snapgen and testdata/roles, each with its truth file):
# - the CSV's role columns sum to allocated_bytes at every point;
# - at the truth's allocated peak event the role columns equal the truth's
#   peak.allocated_by_role byte for byte (bytes the truth calls `other` may be under any role,
#   as in test_roles.py), and equal analyze's peak.by_role;
# - every point has the phase of its event, and the phases are those analyze names for the peak;
# - the SVG is well formed and draws one area per role holding bytes and a band per phase span.
# --role NAME=GLOB adds a column NAME; --by-role with --by-site, --role without --by-role and a
# rule without '=' are one-line errors with exit status 2.
import csv
import io
import json
import os
import xml.etree.ElementTree as ET

from clitest import TESTDATA, check, expect_error, finish, run

ROLES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "autocast_cache",
         "kv_cache", "communication", "other", "unknown"]
PHASES = {"forward", "backward", "optimizer_step", "zero_grad", "data_loading", "other"}
WORDS = {"parameter": "weights", "gradient": "gradients", "optimizer_state": "optimizer state",
         "activation": "activations", "temporary": "temporaries", "input": "inputs", "other": "other",
         "unknown": "unknown"}
# As test_roles.py: not training loops, or files whose roles cannot be read from the stacks.
NOT_TRAINING = {"nostacks.pickle", "legacy.pickle", "forward.pickle", "inference.pickle", "capacity.pickle",
                "capacity_expandable.pickle", "retry.pickle", "ring_start.pickle", "list.pickle"}
SVG = "{http://www.w3.org/2000/svg}"


def manifest(folder):
    with open(os.path.join(TESTDATA, folder, "MANIFEST.tsv")) as fh:
        return [(folder, line.split("\t")[0], line.split("\t")[1]) for line in fh if line.strip()]


def compare(name, got, truth):
    """Truth's `other` may be under any role; every other byte matches."""
    other, spread = truth.get("other", 0), 0
    for role in ROLES:
        if role == "other":
            continue
        g, t = got.get(role, 0), truth.get(role, 0)
        check(name + ": " + role, g >= t, "memsnap %d < truth %d (%r vs %r)" % (g, t, got, truth))
        spread += max(0, g - t)
    check(name + ": only the truth's other moves", spread + got.get("other", 0) == other, "%r vs %r" % (got, truth))


compared = 0
for folder, f, t in manifest("snapgen") + manifest("roles"):
    if f in NOT_TRAINING or not f.endswith(".pickle"):
        continue
    path = os.path.join(TESTDATA, folder, f)
    with open(os.path.join(TESTDATA, folder, t)) as fh:
        truth = json.load(fh)
    rc, out, err = run(["timeline", "--by-role", path, "-o", "-", "--format", "csv", "--points", "100000"])
    check(f + ": csv exit", rc == 0, "%d %r" % (rc, err[:300]))
    if rc != 0:
        continue
    rows = list(csv.DictReader(io.StringIO(out)))
    header = out.split("\n", 1)[0].split(",")
    check(f + ": role columns", header[6:] == ROLES + ["phase"], repr(header))
    rc, js, err = run(["analyze", "--format", "json", path])
    doc = json.loads(js) if rc == 0 else {"devices": []}
    for dev in doc["devices"]:
        d = dev["device"]
        mine = [r for r in rows if int(r["device"]) == d]
        bad = [r["event_index"] for r in mine
               if sum(int(r[k]) for k in ROLES) != int(r["allocated_bytes"])]
        check(f + ": device %d: roles add up at every point" % d, mine and not bad, "events %r" % bad[:5])
        check(f + ": device %d: every point has a phase" % d, all(r["phase"] in PHASES for r in mine),
              repr({r["phase"] for r in mine}))
        td = next((x for x in truth.get("per_device", []) if x.get("device", 0) == d), None)
        if td is None and len(truth.get("per_device", [])) > d:
            td = truth["per_device"][d]
        peak = dev.get("peak")
        if not td or not peak or "allocated_by_role" not in td.get("peak", {}) or peak["at_window_start"]:
            continue
        at = [r for r in mine if int(r["event_index"]) == td["peak"]["allocated_event_index"]]
        check(f + ": device %d: the peak event is a point" % d, len(at) == 1, repr(len(at)))
        if len(at) != 1:
            continue
        got = {k: int(at[0][k]) for k in ROLES if int(at[0][k])}
        compare(f + ": device %d peak" % d, got, td["peak"]["allocated_by_role"])
        check(f + ": device %d: peak is analyze's" % d, got == {k: v for k, v in peak["by_role"].items() if v},
              "%r vs %r" % (got, peak["by_role"]))
        check(f + ": device %d: peak phase is analyze's" % d, at[0]["phase"] == peak["phase"] or
              peak["phase"] == "forward" and at[0]["phase"] == "other",  # the loss reads as the forward's
              "%r vs %r" % (at[0]["phase"], peak["phase"]))
        compared += 1
check("fixtures compared", compared >= 20, str(compared))

# The SVG: one area per role with bytes, its legend, and phase bands.
path = os.path.join(TESTDATA, "roles", "train_s2.pickle")
rc, svg, err = run(["timeline", "--by-role", path, "-o", "-"])
rc2, out, err2 = run(["timeline", "--by-role", path, "-o", "-", "--format", "csv"])
check("svg exit", rc == 0 and rc2 == 0, err + err2)
try:
    root = ET.fromstring(svg.encode("utf-8"))
    titles = [p.findtext(SVG + "title") for p in root.iter(SVG + "path") if p.get("fill") != "none"]
    rows = list(csv.DictReader(io.StringIO(out)))
    held = [WORDS[k] for k in ROLES if k in WORDS and any(int(r[k]) for r in rows)]
    check("svg: an area per role with bytes", sorted(x for x in titles if x) == sorted(held),
          "%r vs %r" % (titles, held))
    bands = [r for r in root.iter(SVG + "rect") if (r.findtext(SVG + "title") or "").split(" from event ")[0] in PHASES]
    spans = sum(1 for k, r in enumerate(rows) if k == 0 or r["phase"] != rows[k - 1]["phase"])
    check("svg: phase bands", len(bands) >= 3 and len(bands) <= len(rows), "%d bands, %d spans" % (len(bands), spans))
    check("svg: role legend", "live bytes by role" in svg and "phases (bands above)" in svg)
except ET.ParseError as e:
    check("svg well-formed", False, str(e))

# A role of one's own: its column, holding what its rule names.
rc, out, err = run(["timeline", "--by-role", "--role", "mine=*train.py:*", path, "-o", "-", "--format", "csv"])
check("--role exit", rc == 0, err)
if rc == 0:
    rows = list(csv.DictReader(io.StringIO(out)))
    check("--role column", "mine" in rows[0] and any(int(r["mine"]) for r in rows), out[:300])
    check("--role adds up", all(sum(int(r[k]) for k in ROLES + ["mine"]) == int(r["allocated_bytes"]) for r in rows))
expect_error("--by-role with --by-site", ["timeline", "--by-role", "--by-site", path, "-o", "-"],
             "--by-role and --by-site: choose one")
expect_error("--role without --by-role", ["timeline", "--role", "x=*", path, "-o", "-"],
             "--role: only with --by-role")
rc, out, err = run(["timeline", "--by-role", "--role", "nonsense", path, "-o", "-"])
check("bad rule", rc == 2 and out == "" and "nonsense" in err and err.count("\n") == 1, "%d %r" % (rc, err))
finish()
