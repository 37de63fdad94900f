#!/usr/bin/env python3
# Issue 54, advice by role, over the real snapshots in ../shared/realdata (never copied into the
# project; exit 77 = SKIP when the folder is absent):
#   notHanmin memory_snapshot.pickle: stale_gradients_at_peak names the previous step's gradients
#     live at the peak (the blocks allocated before the window that the file's zero_grad frees
#     after the peak, computed here from the pickle) and moves zero_grad(set_to_none=True) before
#     the forward, with the share of the peak saved;
#   Yiyi-philosophy oom_snapshot.pickle (--oom-size 100MiB): the fix says weights being loaded and
#     does not lead with a smaller batch;
#   every file: an OOM's first fix agrees with the roles live at it, and
#     activations_kept_without_backward never counts autocast's cache.
import os
import pickle
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from realtest import REAL, analyze, check, finish, memsnap  # noqa: E402,F401


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


SMALLER_BATCH = ("smaller batch or sequence", "smaller micro-batch")

NH = "notHanmin__assignment2-systems__memory_snapshot.pickle"
if os.path.exists(os.path.join(REAL, NH)):
    doc = analyze(os.path.join(REAL, NH))
    d = doc["devices"][0]
    with open(os.path.join(REAL, NH), "rb") as fh:
        snap = pickle.load(fh)
    ann = {(a["name"], a["stage"]): a["time_us"] for a in snap["external_annotations"]}
    zg = (ann[("Optimizer.zero_grad#AdamW.zero_grad", "START")], ann[("Optimizer.zero_grad#AdamW.zero_grad", "END")])
    peak = d["peak"]["event_index"]
    seen, stale, large = set(), 0, 0
    for i, e in enumerate(snap["device_traces"][0]):
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_requested" and e["addr"] not in seen and i > peak and zg[0] <= e["time_us"] <= zg[1]:
            stale += round_size(e["size"])
            large += e["size"] > 1 << 20
    f = [x for x in d["findings"] if x["kind"] == "stale_gradients_at_peak"]
    check(NH + ": stale_gradients_at_peak raised", len(f) == 1, repr([x["kind"] for x in d["findings"]]))
    if f:
        f = f[0]
        # The free records the request; a large block whose remainder was 1 MiB or less was whole.
        check(NH + ": the previous step's gradients", stale <= f["bytes"] <= stale + large * (1 << 20),
              "%d vs %d (+ up to %d MiB)" % (f["bytes"], stale, large))
        check(NH + ": the same as peak.stale_gradient_bytes", f["bytes"] == d["peak"]["stale_gradient_bytes"],
              "%d vs %r" % (f["bytes"], d["peak"]["stale_gradient_bytes"]))
        check(NH + ": moves zero_grad before the forward", "zero_grad(set_to_none=True) before the forward" in f["advice"],
              f["advice"])
        share = "%d%% of the peak" % round(100.0 * f["bytes"] / d["peak"]["allocated_bytes"])
        check(NH + ": says what the peak saves", share in f["advice"], f["advice"])
        check(NH + ": info without memory pressure", f["severity"] == "info", f["severity"])

YI = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle"
if os.path.exists(os.path.join(REAL, YI)):
    doc = analyze(os.path.join(REAL, YI), "--oom-size", "100MiB")
    o = doc["devices"][0]["oom"]
    adv = o["advice"][0]
    check(YI + ": weights being loaded", adv.startswith("Weights being loaded hold"), adv)
    check(YI + ": load sharded, offload or quantize", all(w in adv for w in ("sharded", "offload", "quantize")), adv)
    check(YI + ": does not lead with a smaller batch", not any(s in adv for s in SMALLER_BATCH), adv)
    oomf = [x for x in doc["devices"][0]["findings"] if x["kind"].startswith("oom_")]
    check(YI + ": the finding's fix is the same", oomf and oomf[0]["advice"] == adv, repr(oomf))


# bcrafton's loop never calls zero_grad: its backward adds into every parameter's .grad. Counted
# here from the pickle: frees in AccumulateGrad frames of blocks not allocated there, less the
# allocs in AccumulateGrad (a clone into a .grad that was None). Files whose loops zero their
# gradients, or whose AccumulateGrad only clones (Wedsonlin), raise nothing.
def accumulated(path):
    with open(path, "rb") as fh:
        s = pickle.load(fh)
    if not isinstance(s, dict) or not s.get("device_traces") or not s["device_traces"][0]:
        return None
    ann = [a["name"] for a in s.get("external_annotations", [])]
    if any(n.startswith("Optimizer.zero_grad") for n in ann):
        return None
    live, frees, allocs, fbytes, abytes = {}, 0, 0, 0, 0
    for e in s["device_traces"][0]:
        acc = any("AccumulateGrad" in f["name"] for f in e.get("frames", []))
        if e["action"] == "alloc":
            live[e["addr"]] = acc
            if acc:
                allocs, abytes = allocs + 1, abytes + e["size"]
        elif e["action"] == "free_requested" and acc and not live.get(e["addr"], False):
            frees, fbytes = frees + 1, fbytes + e["size"]
    return (frees - allocs, fbytes - abytes) if frees > allocs else None


BC = "bcrafton__assignment2-systems__memory_snapshot.pickle"
for name in (BC, NH, "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle"):
    path = os.path.join(REAL, name)
    if not os.path.exists(path):
        continue
    want = accumulated(path)
    check(name + ": bcrafton is the one that adds into .grad", (want is not None) == (name == BC), repr(want))
    doc = analyze(path)
    if not doc:
        continue
    d = doc["devices"][0]
    g = d.get("gradients_never_zeroed")
    f = [x for x in d["findings"] if x["kind"] == "gradients_never_zeroed"]
    check(name + ": finding iff the pickle shows it", len(f) == (1 if want else 0), repr(g))
    if want and g:
        check(name + ": gradients", g["gradients"] == want[0], "%r vs %r" % (g, want))
        check(name + ": bytes", g["bytes"] == want[1], "%r vs %r" % (g, want))
        check(name + ": one step in the window: micro-batch caveat", not g["across_a_step"] and f and
              "micro-batches on purpose" in f[0]["message"], repr(f))


# cranberrii (a notebook: line 21 runs `outputs = model(**batch)`, line 22 the backward) keeps
# 1.1 GiB of the forward's activations after its backward: every block live at the dump made under
# line 21 (from the pickle) is one; bitsandbytes' 4-bit matmul runs in the trace and is named.
CR = "cranberrii__ftcourse__memory_snapshot.pickle"
if os.path.exists(os.path.join(REAL, CR)):
    with open(os.path.join(REAL, CR), "rb") as fh:
        s = pickle.load(fh)
    blocks = [b for seg in s["segments"] for b in seg["blocks"] if b["state"] == "active_allocated" and
              any(f["filename"].endswith("3105878423.py") and f["line"] == 21 for f in b.get("frames", []))]
    doc = analyze(os.path.join(REAL, CR))
    if doc:
        d = doc["devices"][0]
        k = d.get("activations_kept_after_backward")
        check(CR + ": kept", k is not None and k["bytes"] == sum(b["size"] for b in blocks) and
              k["blocks"] == len(blocks), "%r vs %d blocks, %d bytes" % (k, len(blocks), sum(b["size"] for b in blocks)))
        check(CR + ": bitsandbytes", k is not None and k["bitsandbytes"], repr(k))
        f = [x for x in d["findings"] if x["kind"] == "activations_kept_after_backward"]
        check(CR + ": finding", len(f) == 1 and "del outputs, loss" in f[0]["advice"], repr(f))


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


for name in sorted(f for f in os.listdir(REAL) if not f.endswith(".md")):
    doc = analyze(os.path.join(REAL, name))
    if not doc:
        continue
    for d in doc["devices"]:
        for o in d["ooms"]:
            if o.get("advice"):
                check(name + ": OOM fix agrees with its roles", agrees(o["advice"][0], o["by_role"], o["allocated_bytes"]),
                      "%s vs %r" % (o["advice"][0][:60], o["by_role"]))
        # no real file but cranberrii keeps activations past a backward (Nesta's OOM tears its
        # graph down after the forward: frees in autograd's destructors are not a backward)
        if name != CR:
            check(name + ": kept after backward", not any(x["kind"] == "activations_kept_after_backward"
                                                            for x in d["findings"]), "raised")
        for f in d["findings"]:
            if f["kind"] == "activations_kept_without_backward":
                t = d["totals"]
                check(name + ": kept activations exclude autocast's cache",
                      f["bytes"] <= t["allocated_bytes"] - t["by_role"].get("autocast_cache", 0), repr(f["bytes"]))

finish()
