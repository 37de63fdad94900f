#!/usr/bin/env python3
# Issue 54 (and 49's diff bullet) over the real snapshots in ../shared/realdata (never copied into
# the project; exit 77 = SKIP when the folder is absent): `diff` leads with the peak's change, the
# phase of each peak and the roles at each.
#   Wedsonlin medium 128 vs 256 training: the phases of the two peaks, as `analyze --format json`
#     of each file gives them, are diff's; they differ, and the text says "the peak moved from X
#     to Y" in those words.
#   notHanmin forward_without_mixed vs forward (mixed precision): the gradients that BmmBackward0
#     made under fp32 and ToCopyBackward0 under autocast are one row keyed by role; its bytes on
#     each side are that side's gradient bytes at the peak (analyze), and no autograd node's row
#     swings by more than the gradients do by role (plus 1% of the peak): before this, the two
#     node rows led the table at -7.53 GiB and +7.52 GiB. The text's first line states the peak's
#     change (figures from the JSON), and its first site row is not a node's.
# On every pair: diff's roles at each peak and at the dump equal analyze's, and add up.
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402

MEMSNAP, REAL = sys.argv[1], sys.argv[2]
if not os.path.isdir(REAL):
    skip("no real data at %s" % REAL, suite=True)
failures = []

PHASE_WORDS = {"forward": "the forward", "backward": "the backward", "optimizer_step": "the optimizer step",
               "zero_grad": "zero_grad", "data_loading": "data loading", "other": "other code"}


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))


def memsnap(*args):
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1")
    p = subprocess.run([MEMSNAP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600, env=env)
    check(" ".join(args[:2]) + ": exit", p.returncode == 0, p.stderr.decode()[:300])
    return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None


def human(n):
    """memsnap's human_bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return "%.2f %s" % (abs(n) / scale, unit)
    return "%d B" % abs(n)


def signed(n):
    return "0 B" if n == 0 else ("+" if n > 0 else "-") + human(n)


def pair(before, after):
    a, b = os.path.join(REAL, before), os.path.join(REAL, after)
    if not (os.path.exists(a) and os.path.exists(b)):
        skip("%s or %s missing" % (before, after))
        return None
    name = before.split("__")[0] + " diff"
    js, text = memsnap("diff", "--format", "json", a, b), memsnap("diff", a, b)
    ja, jb = memsnap("analyze", "--format", "json", a), memsnap("analyze", "--format", "json", b)
    if not (js and text and ja and jb):
        return None
    dev = json.loads(js)["devices"][0]
    if "totals_by_role" not in dev or "by_role_delta_bytes" not in dev["peaks"]:
        check(name + ": roles in diff's JSON", False, repr(sorted(dev)))
        return None
    pa, pb = json.loads(ja)["devices"][0], json.loads(jb)["devices"][0]
    for side, an in (("before", pa), ("after", pb)):
        p = dev["peaks"][side]
        check(name + ": %s peak by role is analyze's" % side, p["by_role"] == an["peak"]["by_role"],
              "%r vs %r" % (p["by_role"], an["peak"]["by_role"]))
        check(name + ": %s peak phase is analyze's" % side, p["phase"] == an["peak"]["phase"],
              "%r vs %r" % (p["phase"], an["peak"]["phase"]))
        check(name + ": %s peak roles add up" % side, sum(p["by_role"].values()) == p["allocated_bytes"], repr(p))
        check(name + ": %s dump by role is analyze's" % side,
              dev["totals_by_role"][side] == an["totals"]["by_role"],
              "%r vs %r" % (dev["totals_by_role"][side], an["totals"]["by_role"]))
    roles = dev["peaks"]["before"]["by_role"]
    check(name + ": by_role_delta_bytes", dev["peaks"]["by_role_delta_bytes"] ==
          {r: dev["peaks"]["after"]["by_role"][r] - roles[r] for r in roles}, repr(dev["peaks"]))
    lines = text.splitlines()
    check(name + ": 80 columns", all(len(l) <= 80 for l in lines), max(lines, key=len))
    head = next((k for k, l in enumerate(lines) if l.startswith("device 0: ")), None)
    check(name + ": a device line leads", head is not None, text[:600])
    if head is None:
        return None
    end = next((k for k in range(head, len(lines))
                if lines[k].startswith(" " * 28) and lines[k].split()[:1] == ["before"]), head + 1)
    lead = " ".join(l.strip() for l in lines[head:end])
    p = dev["peaks"]
    want = "device 0: peak allocated %s (%s -> %s), peak reserved %s;" % (
        signed(p["allocated_delta_bytes"]), human(p["before"]["allocated_bytes"]), human(p["after"]["allocated_bytes"]),
        signed(p["reserved_delta_bytes"]))
    check(name + ": the lead states the peak's change", lead.startswith(want), "%r, want %r" % (lead, want))
    return dev, pa, pb, text, lead


# The peak moved phase: Wedsonlin's medium model at 128 and 256.
got = pair("Wedsonlin__assignment2-systems__medium_128_training_memory_snapshot.pickle",
           "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle")
if got:
    dev, pa, pb, text, lead = got
    a, b = pa["peak"]["phase"], pb["peak"]["phase"]
    check("Wedsonlin: both peaks have a phase", a in PHASE_WORDS and b in PHASE_WORDS, "%r %r" % (a, b))
    check("Wedsonlin: the phases differ", a != b, "%r %r" % (a, b))
    check("Wedsonlin: peak_moved_phase", dev["peak_moved_phase"] is (a != b), repr(dev["peak_moved_phase"]))
    if a in PHASE_WORDS and b in PHASE_WORDS:
        said = "the peak moved from %s to %s;" % (PHASE_WORDS[a], PHASE_WORDS[b])
        check("Wedsonlin: the lead says the peak moved", said in lead, "%r not in %r" % (said, lead))
    rows = [l for l in text.splitlines() if l.startswith("  peak phase")]
    check("Wedsonlin: a peak phase row", len(rows) == 1 and rows[0].split()[-1] == "moved", repr(rows))

# Autograd node renames: notHanmin's fp32 and mixed-precision forwards.
got = pair("notHanmin__assignment2-systems__memory_snapshot_forward_without_mixed.pickle",
           "notHanmin__assignment2-systems__memory_snapshot_forward.pickle")
if got:
    dev, pa, pb, text, lead = got
    nodes = {r["site"] for r in dev["peak_sites"] if r["site"].startswith("backward: ")}
    grad = [r for r in dev["peak_sites"] if r.get("role") == "gradient"]
    check("notHanmin: one gradients row at the peak", len(grad) == 1, repr([r["site"] for r in grad]))
    for side, an in (("before", pa), ("after", pb)):
        g = an["peak"]["by_role"]["gradient"]
        check("notHanmin: %s gradients at the peak are in the row" % side, len(grad) == 1 and grad[0][side + "_bytes"] == g,
              "%r vs %d" % ([r[side + "_bytes"] for r in grad], g))
    g_delta = abs(dev["peaks"]["by_role_delta_bytes"]["gradient"])
    noise = max(dev["peaks"]["before"]["allocated_bytes"], dev["peaks"]["after"]["allocated_bytes"]) // 100
    for r in dev["peak_sites"]:
        if r["site"].startswith("backward: "):
            check("notHanmin: %s does not swing beyond the gradients by role" % r["site"],
                  abs(r["delta_bytes"]) <= g_delta + noise, "%d vs %d" % (r["delta_bytes"], g_delta))
    table = text.split("live at the peak by site", 1)[-1].splitlines()[2:]
    check("notHanmin: the first site row is not an autograd node's",
          table and not table[0].strip().lstrip("+- ").startswith("backward: ") and
          "parameter gradients" not in table[0], table[:2])
    check("notHanmin: the lead names no autograd node", "backward:" not in lead, lead)
    check("notHanmin: the lead names roles at the peak", "by role at the peak: " in lead, lead)
    if pb["peak"]["by_role"]["autocast_cache"] and not pa["peak"]["by_role"]["autocast_cache"]:
        check("notHanmin: mixed precision named", "only after holds autocast's cache (mixed precision)" in lead, lead)

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
