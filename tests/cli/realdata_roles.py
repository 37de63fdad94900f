#!/usr/bin/env python3
# Issue 54 over the real snapshots in ../shared/realdata (never copied into the project; exit
# 77 = SKIP when the folder is absent): on every file the roles add up at the dump, the peak and
# each OOM; the files with Optimizer.step / zero_grad annotations take their phases from them;
# notHanmin's blocks live at the peak that the file's zero_grad frees (allocated before the
# window: the previous step's gradients) are gradients, byte for byte as computed here from the
# pickle; Yiyi-philosophy's OOM is weights being loaded; the Wedsonlin medium runs peak in the
# optimizer step (128) and in the forward (256).
import os
import pickle
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from realtest import REAL, analyze, check, finish, memsnap  # noqa: E402,F401


ANNOTATED = ("Wedsonlin__assignment2-systems__medium_128_training", "Wedsonlin__assignment2-systems__medium_256_training",
             "Wedsonlin__assignment2-systems__medium_1024_training", "bcrafton__", "notHanmin__assignment2-systems__memory_snapshot.pickle")
docs = {}
for name in sorted(f for f in os.listdir(REAL) if not f.endswith(".md")):
    doc = analyze(os.path.join(REAL, name))
    if not doc:
        continue
    docs[name] = doc
    for d in doc["devices"]:
        t = d["totals"]
        check(name + ": dump roles add up", sum(t["by_role"].values()) == t["allocated_bytes"], repr(t["by_role"]))
        if d["peak"]:
            check(name + ": peak roles add up", sum(d["peak"]["by_role"].values()) == d["peak"]["allocated_bytes"],
                  repr(d["peak"]["by_role"]))
        for o in d["ooms"]:
            check(name + ": OOM roles add up", sum(o["by_role"].values()) == o["allocated_bytes"], repr(o["by_role"]))
    check(name + ": no warning that roles do not add up", not any("roles at" in w for w in doc["warnings"]),
          repr(doc["warnings"]))
    if name.startswith(ANNOTATED):
        check(name + ": phases from annotations", doc["devices"][0]["phases_source"] == "annotations",
              doc["devices"][0]["phases_source"])


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


# notHanmin: what zero_grad frees that was allocated before the window and is live at the peak.
NH = "notHanmin__assignment2-systems__memory_snapshot.pickle"
if NH in docs:
    d = docs[NH]["devices"][0]
    with open(os.path.join(REAL, NH), "rb") as fh:
        snap = pickle.load(fh)
    ann = {(a["name"], a["stage"]): a["time_us"] for a in snap["external_annotations"]}
    zg = (ann[("Optimizer.zero_grad#AdamW.zero_grad", "START")], ann[("Optimizer.zero_grad#AdamW.zero_grad", "END")])
    trace = snap["device_traces"][0]
    peak = d["peak"]["event_index"]
    seen, stale, blocks, large = set(), 0, 0, 0
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_requested" and e["addr"] not in seen and i > peak and zg[0] <= e["time_us"] <= zg[1]:
            stale += round_size(e["size"])
            blocks += 1
            large += e["size"] > 1 << 20
    check(NH + ": stale gradients found here", blocks == 327, "%d blocks" % blocks)
    # The free event records the request; the block holds its rounded size, and a large-pool block
    # whose remainder was 1 MiB or less was handed out whole (the replay knows which).
    g = d["peak"]["by_role"]["gradient"]
    check(NH + ": gradients at the peak are the previous step's", stale <= g <= stale + large * (1 << 20),
          "%d vs %d (+ up to %d MiB)" % (g, stale, large))
    check(NH + ": peak in the forward", d["peak"]["phase"] == "forward", d["peak"]["phase"])
    # cuBLAS's workspace (two blocks made by the first einsum's matmul, never freed) is no activation
    ws = sum(b["size"] for seg in snap["segments"] for b in seg["blocks"] if b["state"] == "active_allocated" and
             any("getNewWorkspace" in f["name"] for f in b.get("frames", [])))
    check(NH + ": the cuBLAS workspace is found here", ws == 17039360, ws)
    check(NH + ": the cuBLAS workspace is `other` at the dump", d["totals"]["by_role"]["other"] >= ws,
          repr(d["totals"]["by_role"]))

YI = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle"
if YI in docs:
    doc = analyze(os.path.join(REAL, YI), "--oom-size", "100MiB")
    if doc:
        o = doc["devices"][0]["oom"]
        check(YI + ": the OOM is weights being loaded", o["by_role"]["parameter"] == o["allocated_bytes"] > 0,
              repr(o["by_role"]))

for size, phase in (("128", "optimizer_step"), ("256", "forward")):
    name = "Wedsonlin__assignment2-systems__medium_%s_training_memory_snapshot.pickle" % size
    if name in docs:
        p = docs[name]["devices"][0]["peak"]
        check(name + ": peak phase", p["phase"] == phase, p["phase"])

finish()
