#!/usr/bin/env python3
# Issue 54: advice follows the role that fills memory and never contradicts it, on committed
# fixtures and their truth files (no ../shared needed).
#   kv_cache      a serving engine's dump: kv_cache_reserved names the KV cache's bytes (the
#                 truth's kv_cache), its private pool (0, 2) and frame, and the engine's setting;
#                 an OOM there (--oom-size) is fixed by that setting, not by a smaller batch.
#   train         an OOM over the dumped state (--oom-size): weights and optimizer state only,
#                 so the fix is sharding / a lighter optimizer with the truth's bytes.
#   capacity      an OOM in the forward: the bytes that are not weights, gradients or optimizer
#                 state by the truth fill memory, so the fix is activation checkpointing.
#   autocast_eval one forward under autocast, no backward: activations_kept_without_backward is
#                 the truth's activations, autocast's cache named apart.
#   train_s2...   every fixture's OOM fixes and findings agree with the roles analyze reports.
import json
import os
import subprocess
import sys

MEMSNAP, DATA = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))


def human(n):
    if n < 1024:
        return "%d B" % n
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if n < 1024 or unit == "TiB":
            return "%.2f %s" % (n, unit)


def analyze(path, *extra):
    p = subprocess.run([MEMSNAP, "analyze", "--format", "json", path] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(path + ": exit", p.returncode == 0, p.stderr.decode()[:300])
    return json.loads(p.stdout)["devices"][0]


def truth(path):
    with open(path.replace(".pickle", ".truth.json")) as fh:
        return json.load(fh)["per_device"][0]


SMALLER_BATCH = ("smaller batch or sequence", "smaller micro-batch")

# kv_cache: the finding at the dump, and the fix at an OOM over the dump.
kv = os.path.join(DATA, "roles", "kv_cache.pickle")
t = truth(kv)["allocated_by_role"]
d = analyze(kv)
f = [x for x in d["findings"] if x["kind"] == "kv_cache_reserved"]
check("kv_cache: kv_cache_reserved raised", len(f) == 1, repr([x["kind"] for x in d["findings"]]))
if f:
    f = f[0]
    check("kv_cache: bytes are the truth's KV cache", f["bytes"] == t["kv_cache"], "%d vs %d" % (f["bytes"], t["kv_cache"]))
    check("kv_cache: info", f["severity"] == "info", f["severity"])
    check("kv_cache: names the pool and frame",
          "private pool (0, 2)" in f["message"] and "cache_engine.py:83:_allocate_kv_cache" in f["message"], f["message"])
    share = "%d%%" % round(100.0 * t["kv_cache"] / d["totals"]["reserved_bytes"])
    check("kv_cache: share of reserved", share + " of reserved" in f["message"], f["message"])
    check("kv_cache: the engine's setting", "gpu_memory_utilization" in f["advice"], f["advice"])
d = analyze(kv, "--oom-size", "1GiB")
adv = d["oom"]["advice"][0]
check("kv_cache OOM: the engine's setting first", adv.startswith("The KV cache holds " + human(t["kv_cache"])), adv)
check("kv_cache OOM: no smaller batch", not any(s in adv for s in SMALLER_BATCH), adv)

# train --oom-size: weights and optimizer state only (the truth at the dump).
train = os.path.join(DATA, "snapgen", "train.pickle")
t = truth(train)["allocated_by_role"]
model = sum(t.get(r, 0) for r in ("parameter", "gradient", "optimizer_state"))
check("train: the truth is model state only", model == truth(train)["allocated"], repr(t))
d = analyze(train, "--oom-size", "100MiB")
adv = d["oom"]["advice"][0]
check("train OOM: sharding first",
      adv.startswith("Weights, gradients and optimizer state hold %s (100%% of allocated)" % human(model)), adv)
check("train OOM: not weights being loaded (optimizer state is there)", "being loaded" not in adv, adv)
oomf = [x for x in d["findings"] if x["kind"].startswith("oom_")]
check("train OOM: the finding's fix is the same", oomf and oomf[0]["advice"] == adv, repr(oomf))

# capacity: an OOM in the forward, filled by what is not model state.
cap = os.path.join(DATA, "snapgen", "capacity.pickle")
tp = truth(cap)["peak"]
acts = tp["allocated_bytes"] - sum(tp["allocated_by_role"].get(r, 0)
                                   for r in ("parameter", "gradient", "optimizer_state"))
d = analyze(cap)
adv = d["oom"]["advice"][0]
check("capacity: the OOM is the peak", d["oom"]["allocated_bytes"] == tp["allocated_bytes"],
      "%d vs %d" % (d["oom"]["allocated_bytes"], tp["allocated_bytes"]))
check("capacity OOM: checkpointing first", adv.startswith("Activations hold " + human(acts)), adv)
check("capacity OOM: names torch.utils.checkpoint", "torch.utils.checkpoint" in adv, adv)

# autocast_eval: one forward under autocast with no backward keeps activations and autocast's
# cached casts; only the activations (the truth's) are what no_grad would free.
ae = os.path.join(DATA, "roles", "autocast_eval.pickle")
t = truth(ae)["allocated_by_role"]
d = analyze(ae)
f = [x for x in d["findings"] if x["kind"] == "activations_kept_without_backward"]
check("autocast_eval: activations_kept_without_backward raised", len(f) == 1, repr([x["kind"] for x in d["findings"]]))
if f:
    check("autocast_eval: the truth's activations only", f[0]["bytes"] == t["activation"],
          "%d vs %d" % (f[0]["bytes"], t["activation"]))
    check("autocast_eval: says autocast's cache is kept and no_grad does not free it",
          ("Another %s kept is autocast's cache" % human(t["autocast_cache"])) in f[0]["message"] and
          "torch.no_grad() does not free it" in f[0]["message"], f[0]["message"])

# Every fixture: the OOM's first fix never contradicts its roles.
def agrees(adv, by_role, total):
    b = lambda *rs: sum(by_role.get(r, 0) for r in rs)
    if adv.startswith("Activations hold"):
        return 2 * b("activation", "temporary") >= total
    if adv.startswith("Weights, gradients and optimizer state"):
        return 2 * b("parameter", "gradient", "optimizer_state") >= total
    if adv.startswith("Weights being loaded"):
        return 2 * b("parameter") >= total and b("gradient", "optimizer_state") * 10 < total
    if adv.startswith("The KV cache"):
        return 2 * b("kv_cache") >= total
    return True


for sub in ("snapgen", "roles"):
    for name in sorted(os.listdir(os.path.join(DATA, sub))):
        if not name.endswith(".pickle"):
            continue
        d = analyze(os.path.join(DATA, sub, name))
        for o in d["ooms"]:
            if o.get("advice"):
                check(name + ": OOM fix agrees with its roles", agrees(o["advice"][0], o["by_role"], o["allocated_bytes"]),
                      "%s vs %r" % (o["advice"][0][:60], o["by_role"]))

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
