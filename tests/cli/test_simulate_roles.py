#!/usr/bin/env python3
# Issue 54, what-if by role: `simulate --drop ROLE` and `--scale ROLE:F` through the allocator model.
#
# On snapgen's training fixtures (testdata/snapgen and testdata/roles, each with its truth file)
# the simulated peak allocated with `--drop R` equals an independent computation: the fixture's
# trace replayed here from the pickle, skipping the allocs (and frees) of the blocks of role R.
# Which blocks are R is read from the frames snapgen.py gives each role (st_param, st_opt, st_bwd
# freed by zero_grad, st_fwd/st_loss), and that reading is itself checked against the truth: its
# bytes of R at the truth's allocated peak must equal the truth's peak.allocated_by_role[R], else
# the (fixture, role) pair is not compared. `--scale activation:0.5` lowers the peak allocated;
# `--scale R:1` changes nothing (peaks, counters and the layout are the as-recorded run's);
# --role NAME=GLOB names a role --drop takes; bad options are one-line usage errors naming them.
import json
import math
import os
import pickle

from clitest import TESTDATA, check, expect_error, finish, run, snap


def simulate(path, *args):
    rc, out, err = run(["simulate", "--format", "json", path] + list(args))
    check("simulate %s %s" % (os.path.basename(path), " ".join(args)), rc == 0, "exit %d: %s" % (rc, err[:300]))
    return json.loads(out) if rc == 0 else None


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def has(frames, name=None, file_end=None, line=None):
    for f in frames:
        if (name is None or f["name"] == name) and (file_end is None or f["filename"].endswith(file_end)) and \
                (line is None or f["line"] == line):
            return True
    return False


def blocks(trace):
    """Per alloc event: (index, size, alloc frames, the free_requested/free event's frames or None, its index)."""
    out, open_at = [], {}
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            open_at[e["addr"]] = len(out)
            out.append([i, round_size(e["size"]), e.get("frames", []), None, None])
        elif e["action"] in ("free_requested", "free") and e["addr"] in open_at:
            b = out[open_at.pop(e["addr"])]
            b[3], b[4] = e.get("frames", []), i
    return out


def snapgen_role(b):
    """The role snapgen.py gives a block, read from the frames it allocates (and frees) it with."""
    _, _, frames, free_frames, _ = b
    if has(frames, "__new__", "torch/nn/parameter.py"):
        return "parameter"
    if has(frames, "_init_group"):
        return "optimizer_state"
    if has(frames, "_engine_run_backward"):  # st_bwd: a gradient lives to zero_grad, a temporary dies at once
        return "gradient" if free_frames is None or has(free_frames, "zero_grad") else "temporary"
    if has(frames, "forward", "torch/nn/modules/linear.py") or has(frames, "gelu") or has(frames, "cross_entropy"):
        return "activation"
    if has(frames, "_multi_tensor_adam"):
        return "temporary"
    if has(frames, "train_step", line=110) and len(frames) == 3:
        return "input"
    return "other"


def peak(trace, dropped, scaled=(), factor=1):
    """The most allocated bytes after any event with the allocs of `dropped` (alloc indices) and their frees
    gone, and those of `scaled` `factor` times their request (rounded up to 512 B as the allocator rounds)."""
    live, now, best = {}, 0, 0
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            if i in dropped:
                continue
            live[e["addr"]] = round_size(math.ceil(e["size"] * factor) if i in scaled else e["size"])
            now += live[e["addr"]]
            best = max(best, now)
        elif e["action"] in ("free_requested", "free") and e["addr"] in live:
            now -= live.pop(e["addr"])
    return best


def bytes_at(bs, event, keep):
    return sum(b[1] for b in bs if keep(b) and b[0] <= event and (b[4] is None or b[4] > event))


def manifest(folder):
    with open(os.path.join(TESTDATA, folder, "MANIFEST.tsv")) as fh:
        return [(folder, line.split("\t")[0], line.split("\t")[1]) for line in fh if line.strip()]


TRAINING = ("train", "leak", "big_layer", "model_per_step", "empty_cache", "streams2", "devices2", "cpp", "frag")
compared, unchanged, lowered = 0, 0, 0
for folder, f, t in manifest("snapgen") + manifest("roles"):
    if not f.startswith(TRAINING) or not f.endswith(".pickle"):
        continue
    path = os.path.join(TESTDATA, folder, f)
    with open(os.path.join(TESTDATA, folder, t)) as fh:
        truth = json.load(fh)
    with open(path, "rb") as fh:
        data = pickle.load(fh)
    doc = simulate(path)
    if not doc:
        continue
    dev = doc["device"]
    pd = truth["per_device"][dev]
    if pd.get("trace_dropped") or "peak" not in pd:  # the window starts mid-run: the replay here starts empty
        continue
    trace = data["device_traces"][dev]
    bs = blocks(trace)
    # The replay here is the allocator's own count on this fixture (no block handed out whole).
    if peak(trace, set()) != pd["peak"]["allocated_bytes"]:
        continue
    at = pd["peak"]["allocated_event_index"]
    for role in ("parameter", "gradient", "optimizer_state", "activation", "input"):
        mine = {b[0] for b in bs if snapgen_role(b) == role}
        want_role = pd["peak"]["allocated_by_role"].get(role, 0)
        if not mine or bytes_at(bs, at, lambda b: b[0] in mine) != want_role:
            continue  # the frames do not say this role alone here (frag's cached buffers are `other`)
        got = simulate(path, "--drop", role)
        if not got:
            continue
        compared += 1
        want = peak(trace, mine)
        run1 = got["runs"][1]
        check(f + ": --drop %s peak allocated" % role, run1["peak_allocated_bytes"] == want,
              "memsnap %d, replayed without the role %d" % (run1["peak_allocated_bytes"], want))
        check(f + ": --drop %s leaves none of it" % role, run1["peak_allocated_by_role"][role] == 0,
              repr(run1["peak_allocated_by_role"]))
        check(f + ": --drop %s: the as-recorded run unchanged" % role,
              got["runs"][0]["peak_allocated_bytes"] == pd["peak"]["allocated_bytes"], repr(got["runs"][0]))
        e = got["role_edits"][0]
        check(f + ": --drop %s: role_edits" % role,
              e["role"] == role and e["dropped"] is True and e["peak_after_bytes"] == 0 and
              e["at_recorded_peak_after_bytes"] == 0 and
              e["peak_before_bytes"] == want_role and e["blocks"] == len(mine), repr(e))
    # Scaling by 1 is the recorded run: same peaks, counters and layout.
    for role in ("activation", "gradient", "parameter"):
        got = simulate(path, "--scale", role + ":1")
        if not got:
            continue
        r0, r1 = got["runs"][0], got["runs"][1]
        same = all(r0[k] == r1[k] for k in ("peak_reserved_bytes", "peak_allocated_bytes", "stranded_at_peak_bytes",
                                            "segment_allocs", "segment_frees", "retries", "ooms"))
        check(f + ": --scale %s:1 changes nothing" % role, same, "%r vs %r" % (r0, r1))
        check(f + ": --scale %s:1 layout as recorded" % role, r1["layout_vs_recorded"]["identical"] is True,
              repr(r1["layout_vs_recorded"]))
        check(f + ": --scale %s:1 bytes by role" % role, r0["peak_allocated_by_role"] == r1["peak_allocated_by_role"],
              "%r vs %r" % (r0["peak_allocated_by_role"], r1["peak_allocated_by_role"]))
        e = got["role_edits"][0]
        check(f + ": --scale %s:1 the role's bytes" % role, e["peak_before_bytes"] == e["peak_after_bytes"] ==
              e["at_recorded_peak_after_bytes"] == pd["peak"]["allocated_by_role"].get(role, e["peak_before_bytes"]),
              repr(e))
        unchanged += same
    # Half the activations: the peak allocated of the replay with them halved (lower where the
    # activations hold the peak: a peak in the optimizer step holds only the loss).
    acts = {b[0] for b in bs if snapgen_role(b) == "activation"}
    got = simulate(path, "--scale", "activation:0.5")
    if got and acts and bytes_at(bs, at, lambda b: b[0] in acts) == pd["peak"]["allocated_by_role"]["activation"]:
        r0, r1 = got["runs"][0], got["runs"][1]
        want = peak(trace, set(), acts, 0.5)
        check(f + ": --scale activation:0.5 peak allocated", r1["peak_allocated_bytes"] == want,
              "memsnap %d, replayed with half the activations %d" % (r1["peak_allocated_bytes"], want))
        check(f + ": the edited run says so", r1["role_edited"] is True and r0["role_edited"] is False, repr(r1))
        lowered += r1["peak_allocated_bytes"] < r0["peak_allocated_bytes"]

check("fixtures compared with the replay without a role", compared >= 20, "only %d" % compared)
check("fixtures where scaling by 1 changes nothing", unchanged >= 30, "only %d" % unchanged)
check("fixtures where half the activations lower the peak", lowered >= 3, "only %d" % lowered)
print("compared %d drops; scaling by 1 changed nothing on %d; half the activations lowered %d peaks" %
      (compared, unchanged, lowered))

# --role NAME=GLOB: the batch made at train.py:110 named `mine` and dropped is the replay without it.
path = snap("train.pickle")
with open(path, "rb") as fh:
    trace = pickle.load(fh)["device_traces"][0]
bs = blocks(trace)
mine = {b[0] for b in bs if has(b[2], line=110, file_end="train.py")}
got = simulate(path, "--role", "mine=*train.py:110:*", "--drop", "mine")
if got:
    check("--role mine --drop mine", got["runs"][1]["peak_allocated_bytes"] == peak(trace, mine) and
          got["role_edits"][0]["blocks"] == len(mine), "%r, want %d" % (got["role_edits"], peak(trace, mine)))
# Several roles at once, and with --set: the edits are in [1] and in every --set run.
got = simulate(path, "--drop", "gradient", "--drop", "optimizer_state", "--set", "expandable_segments:True")
if got:
    drop = {b[0] for b in bs if snapgen_role(b) in ("gradient", "optimizer_state")}
    check("two drops", got["runs"][1]["peak_allocated_bytes"] == peak(trace, drop),
          "%d vs %d" % (got["runs"][1]["peak_allocated_bytes"], peak(trace, drop)))
    check("the --set run takes the edits", got["runs"][2]["role_edited"] is True and
          got["runs"][2]["peak_allocated_by_role"]["gradient"] == 0, repr(got["runs"][2]))
    check("the runs: as recorded, the edits, the --set", [r["label"] for r in got["runs"]] ==
          ["as recorded", "--drop gradient --drop optimizer_state", "expandable_segments:True"],
          repr([r["label"] for r in got["runs"]]))

# The text says it is an estimate and shows the role's bytes before and after at the peak.
rc, out, err = run(["simulate", "--scale", "activation:0.5", path])
check("text exit", rc == 0, err)
check("text says estimate", "ESTIMATE" in out and "scaled uniformly" in out, out)
check("text shows before/after", "at the peak allocated as recorded; in [1]" in out and "at its own peak" in out, out)
check("text fits 80 columns", all(len(line) <= 80 for line in out.splitlines()),
      max(out.splitlines(), key=len))

# Bad options: one line, exit 2, naming the option.
RANGE = "F must be a number above 0 and at most 1000 (0.5 halves the role's bytes; --drop ROLE removes them)"
for bad in ("activation:0", "activation:-1", "activation:nan", "activation:inf", "activation:1001",
            "activation:x", "activation:"):
    expect_error("--scale " + bad, ["simulate", "--scale", bad, path], "--scale " + bad + ": " + RANGE)
expect_error("--scale without F", ["simulate", "--scale", "activation", path],
             "--scale activation: expected ROLE:F, e.g. activation:0.5")
ROLES = ("parameter, gradient, optimizer_state, activation, temporary, input, autocast_cache, kv_cache, "
         "communication, other, unknown")
expect_error("--scale unknown role", ["simulate", "--scale", "activations:0.5", path],
             "--scale activations:0.5: not a role (the roles: " + ROLES + ", or a --role NAME)")
expect_error("--drop unknown role", ["simulate", "--drop", "weights", path],
             "--drop weights: not a role (the roles: " + ROLES + ", or a --role NAME)")
expect_error("--drop with F", ["simulate", "--drop", "gradient:0.5", path],
             "--drop gradient:0.5: expected a role name, e.g. --drop gradient (--scale ROLE:F scales one)")
expect_error("a role twice", ["simulate", "--drop", "gradient", "--scale", "gradient:0.5", path],
             "--drop gradient: the role 'gradient' is scaled or dropped twice")
finish()
