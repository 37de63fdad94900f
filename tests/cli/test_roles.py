#!/usr/bin/env python3
# Issue 54: every live byte has a role. On snapgen's training runs (testdata/snapgen and the
# seeds, streams, devices and scenarios of testdata/roles, each with its truth file) memsnap's
# bytes by role at the dump (totals.by_role) and at the allocated peak (peak.by_role) equal the
# truth's allocated_by_role byte for byte, except that bytes the truth calls `other` may be
# under any role. At every state the roles add up to the allocated bytes. --role NAME=GLOB adds
# a role; a rule without '=' or with a bad glob is a one-line usage error naming it. The text
# opens the peak with its roles and phase, and every file gets a line by role at the dump.
import json
import os

from clitest import TESTDATA, check, expect_error, finish, run, snap

ROLES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "autocast_cache",
         "kv_cache", "communication", "other", "unknown"]
# Snapgen scenarios that are not training runs, or files the roles cannot be read from:
#   nostacks  recorded without stacks: nothing says what a block is
#   legacy    1.13/2.0 history form: no trace, and its blocks' stacks are the dump's alone
#   forward, inference, capacity: not training loops (checked for adding up only)
# ring_start: the peak is the state the window opened with, mid-backward: blocks allocated before
# the window carry only their free's stack, which cannot tell a temporary from an activation, and
# the batch (input) from anything: there those three roles and `unknown` are compared as one.
PRE_WINDOW = {"ring_start.pickle"}
LOOSE = ("activation", "temporary", "input", "unknown")
NOT_TRAINING = {"nostacks.pickle", "legacy.pickle", "forward.pickle", "inference.pickle", "capacity.pickle",
                "capacity_expandable.pickle", "retry.pickle"}


def analyze(path, *extra):
    rc, out, err = run(["analyze", "--format", "json", path] + list(extra))
    check("analyze %s" % path, rc == 0, "exit %d: %s" % (rc, err[:300]))
    return json.loads(out) if rc == 0 else None


def merge(by):
    out = {r: b for r, b in by.items() if r not in LOOSE}
    out["before_window"] = sum(by.get(r, 0) for r in LOOSE)
    return out


def compare(name, got, truth, loose=False):
    """got: role -> bytes (memsnap); truth: role -> bytes. Truth's `other` may be anywhere."""
    if loose:
        got, truth = merge(got), merge(truth)
    other = truth.get("other", 0)
    spread = 0
    for role in set(got) | set(truth):
        if role == "other":
            continue
        g, t = got.get(role, 0), truth.get(role, 0)
        check(name + ": " + role, g >= t, "memsnap %d < truth %d (%r vs %r)" % (g, t, got, truth))
        spread += max(0, g - t)
    check(name + ": other", got.get("other", 0) <= other, "%r vs %r" % (got, truth))
    check(name + ": only the truth's other moves", spread + got.get("other", 0) == other,
          "moved %d, truth other %d (%r vs %r)" % (spread, other, got, truth))


def manifest(folder):
    with open(os.path.join(TESTDATA, folder, "MANIFEST.tsv")) as fh:
        return [(folder, line.split("\t")[0], line.split("\t")[1]) for line in fh if line.strip()]


compared = 0
for folder, f, t in manifest("snapgen") + manifest("roles"):
    path = os.path.join(TESTDATA, folder, f)
    with open(os.path.join(TESTDATA, folder, t)) as fh:
        truth = json.load(fh)
    doc = analyze(path)
    if not doc:
        continue
    for d in doc["devices"]:
        totals = d["totals"]
        check(f + ": by_role names", list(totals["by_role"])[: len(ROLES)] == ROLES, repr(totals["by_role"]))
        check(f + ": dump roles add up", sum(totals["by_role"].values()) == totals["allocated_bytes"],
              "%r vs %d" % (totals["by_role"], totals["allocated_bytes"]))
        if d["peak"]:
            check(f + ": peak roles add up", sum(d["peak"]["by_role"].values()) == d["peak"]["allocated_bytes"],
                  repr(d["peak"]))
            check(f + ": peak phase", d["peak"]["phase"] in (None, "forward", "backward", "optimizer_step",
                                                               "zero_grad", "data_loading", "other"), repr(d["peak"]))
        for o in d["ooms"]:
            check(f + ": OOM roles add up", sum(o["by_role"].values()) == o["allocated_bytes"], repr(o["by_role"]))
    check(f + ": no warning that roles do not add up", not any("roles at" in w for w in doc["warnings"]),
          repr(doc["warnings"]))
    if f in NOT_TRAINING or f.startswith("leak.step"):
        continue
    compared += 1
    for pd, d in zip(truth["per_device"], doc["devices"]):
        name = "%s device %d" % (f, d["device"])
        if "allocated_by_role" in pd:
            compare(name + " at the dump", d["totals"]["by_role"], pd["allocated_by_role"])
        if "allocated_by_role" in pd.get("peak", {}) and d["peak"]:
            check(name + ": the peak's event", d["peak"]["event_index"] == pd["peak"]["allocated_event_index"] or
                  d["peak"]["at_window_start"], repr(d["peak"]["event_index"]))
            compare(name + " at the peak", d["peak"]["by_role"], pd["peak"]["allocated_by_role"], f in PRE_WINDOW)
check("training fixtures compared", compared >= 25, "only %d" % compared)

# The roles snapgen never makes, from fixtures with their frames (testdata/gen/make_roles_named_fixtures.py):
# a serving engine's KV cache in private pool (0, 2), an NCCL buffer, weights moved by Module.to and a
# block without a stack (no trace: the stacks alone); autocast's cached fp16 weight copies in a forward.
for name in ("kv_cache", "autocast"):
    with open(os.path.join(TESTDATA, "roles", name + ".truth.json")) as fh:
        pd = json.load(fh)["per_device"][0]
    doc = analyze(os.path.join(TESTDATA, "roles", name + ".pickle"))
    if not doc:
        continue
    d = doc["devices"][0]
    nonzero = {r: b for r, b in d["totals"]["by_role"].items() if b}
    check(name + ": roles at the dump", nonzero == pd["allocated_by_role"], "%r vs %r" % (nonzero, pd))
    if "peak" in pd:
        nonzero = {r: b for r, b in d["peak"]["by_role"].items() if b}
        check(name + ": roles at the peak", nonzero == pd["peak"]["allocated_by_role"], "%r vs %r" % (nonzero, pd))
        check(name + ": peak in the forward", d["peak"]["phase"] == "forward", d["peak"]["phase"])
rc, out, err = run(["analyze", os.path.join(TESTDATA, "roles", "kv_cache.pickle")])
check("kv_cache text", "KV cache 120.00 MiB in private pool (0, 2) from cache_engine.py:83:_allocate_kv_cache"
      in " ".join(out.split()), out)
doc = analyze(os.path.join(TESTDATA, "roles", "kv_cache.pickle"))
if doc:
    where = doc["devices"][0]["totals"]["by_role_where"]
    check("kv_cache where", where and where[0] == {"role": "kv_cache", "bytes": 6 * 20 * 2**20,
                                                   "frame": "cache_engine.py:83:_allocate_kv_cache",
                                                   "private_pool": [0, 2]}, repr(where))

# The phase of the peak: snapgen's train peaks in the optimizer step (Adam's state and a temporary).
doc = analyze(snap("train.pickle"))
if doc:
    check("train: peak in the optimizer step", doc["devices"][0]["peak"]["phase"] == "optimizer_step",
          repr(doc["devices"][0]["peak"]["phase"]))

# --role NAME=GLOB: user rules win, their names beside the built-in ones.
doc = analyze(snap("train.pickle"), "--role", "mine=*build_model", "--role", "opt=*adam.py")
if doc:
    by = doc["devices"][0]["totals"]["by_role"]
    base = analyze(snap("train.pickle"))["devices"][0]["totals"]["by_role"]
    check("--role: mine holds the weights", by.get("mine") == base["parameter"] and by["parameter"] == 0, repr(by))
    check("--role: opt holds the optimizer state", by.get("opt") == base["optimizer_state"], repr(by))
    check("--role: adds up", sum(by.values()) == doc["devices"][0]["totals"]["allocated_bytes"], repr(by))
expect_error("--role without =", ["analyze", snap("train.pickle"), "--role", "mine"],
             "--role 'mine': expected NAME=GLOB (for example mine='*my_model.py:*')")
expect_error("--role bad glob", ["analyze", snap("train.pickle"), "--role", "mine=[abc"],
             "--role 'mine=[abc': not a glob (empty, or a '[' without ']')")
expect_error("--role empty name", ["analyze", snap("train.pickle"), "--role", "=*x"],
             "--role '=*x': the name must be 1 to 64 letters, digits, '_', '-' or '.'")

# Text: the peak opens with its roles and phase; a line by role at the dump, also without a trace.
rc, out, err = run(["analyze", snap("train.pickle")])
check("text: exit", rc == 0, err)
check("text: peak roles", "by role    peak 10.01 MiB in the optimizer step: temporaries 8.00 MiB" in out, out)
check("text: dump roles", "  by role at the dump: optimizer state 1.00 MiB, weights 514.00 KiB" in out, out)
check("text: 80 columns", all(len(line) <= 80 for line in out.splitlines()),
      [line for line in out.splitlines() if len(line) > 80])
rc, out, err = run(["analyze", snap("list.pickle")])
flat = " ".join(out.split())
check("text without a trace: dump roles", "by role at the dump:" in flat and "(stacks alone: no trace)" in flat, out)
finish()
