#!/usr/bin/env python3
# Issue 54: gradients added into across steps. testdata/roles/grads_*.pickle (made by
# testdata/gen/make_grad_fixtures.py) are training loops with and without zero_grad, with the
# events autograd's AccumulateGrad records; each truth file says what a correct analyzer finds:
# gradients_never_zeroed = {gradients, bytes, first_event, across_a_step}, or null where the loop
# zeroes its gradients (zero_grad(set_to_none=True) annotated), where AccumulateGrad clones into a
# .grad that was None, or where micro-batches accumulate on purpose before a step and zero_grad.
# kept_after_backward.pickle keeps each layer's matmul input past the backward (bitsandbytes'
# 4-bit matmul keeps it on its autograd ctx) until the next step rebinds `outputs`: its truth's
# activations_kept_after_backward = {bytes, blocks, bitsandbytes}; null in the other runs.
import glob
import json
import os

from clitest import TESTDATA, check, finish, run

fixtures = sorted(glob.glob(os.path.join(TESTDATA, "roles", "grads_*.pickle")))
check("fixtures", len(fixtures) == 5, repr(fixtures))
fixtures.append(os.path.join(TESTDATA, "roles", "kept_after_backward.pickle"))
for path in fixtures:
    name = os.path.basename(path)
    with open(path.replace(".pickle", ".truth.json")) as fh:
        truth = json.load(fh)["per_device"][0]
    want, kept = truth["gradients_never_zeroed"], truth["activations_kept_after_backward"]
    rc, out, err = run(["analyze", "--format", "json", path])
    check(name + ": exit", rc == 0, err[:300])
    if rc != 0:
        continue
    d = json.loads(out)["devices"][0]
    check(name + ": gradients_never_zeroed", d.get("gradients_never_zeroed") == want,
          "%r vs truth %r" % (d.get("gradients_never_zeroed"), want))
    found = [f for f in d["findings"] if f["kind"] == "gradients_never_zeroed"]
    check(name + ": finding raised iff the truth has one", len(found) == (1 if want else 0),
          repr([f["kind"] for f in d["findings"]]))
    if want and found:
        f = found[0]
        check(name + ": warning", f["severity"] == "warning", f["severity"])
        check(name + ": bytes", f["bytes"] == want["bytes"], "%d vs %d" % (f["bytes"], want["bytes"]))
        check(name + ": names the count", "adds into %d gradients" % want["gradients"] in f["message"],
              f["message"])
        check(name + ": correctness", "correctness bug" in f["message"], f["message"])
        check(name + ": fix", "zero_grad(set_to_none=True)" in f["advice"], f["advice"])
        # without a step between two accumulating backward passes, micro-batches may be on purpose
        check(name + ": micro-batch caveat iff no step between",
              ("micro-batches on purpose" in f["message"]) == (not want["across_a_step"]), f["message"])
    got = d.get("activations_kept_after_backward")
    check(name + ": kept after backward iff the truth", (got is None) == (kept is None), repr(got))
    if kept and got:
        for k in ("bytes", "blocks", "bitsandbytes"):
            check(name + ": kept " + k, got[k] == kept[k], "%r vs truth %r" % (got, kept))
        f = [x for x in d["findings"] if x["kind"] == "activations_kept_after_backward"]
        check(name + ": kept finding", len(f) == 1 and f[0]["bytes"] == kept["bytes"], repr(f))
        if f:
            check(name + ": names bitsandbytes", "bitsandbytes' 4-bit matmul" in f[0]["message"], f[0]["message"])
            check(name + ": names the frame", "modeling_llama.py:216:forward" in f[0]["message"], f[0]["message"])
            check(name + ": fix", "del outputs, loss" in f[0]["advice"], f[0]["advice"])
    # the text says it too, in 80 columns
    rc, out, err = run(["analyze", path])
    check(name + ": text", ("gradients_never_zeroed" in out) == bool(want), out[-1500:])
    check(name + ": 80 columns", all(len(l) <= 80 for l in out.splitlines()),
          max(out.splitlines(), key=len))
finish()
