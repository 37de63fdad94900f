#!/usr/bin/env python3
# Issue 54, what-if by role on a real snapshot in ../shared/realdata (never copied into the
# project; exit 77 = SKIP when the folder is absent). notHanmin's memory_snapshot.pickle holds
# AdamW's exp_avg / exp_avg_sq (7.43 GiB, alive before the window opens): `simulate --scale
# optimizer_state:0.125` (the state sharded over 8 ranks) lowers the peak allocated by about 7/8
# of the optimizer state at the peak, derived from analyze's own peak.by_role (within the
# allocator's rounding: requests scale, blocks round up to 512 B, and a large block whose rest
# would be 1 MiB or less is handed out whole); the as-recorded run's bytes by role at the peak
# are analyze's; `--scale optimizer_state:1` changes nothing; the text says it is an estimate.
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from realtest import REAL, analyze, check, finish, memsnap  # noqa: E402,F401


path = os.path.join(REAL, "notHanmin__assignment2-systems__memory_snapshot.pickle")
analyzed = json.loads(memsnap("analyze", "--format", "json", path))
peak = analyzed["devices"][0]["peak"]
opt = peak["by_role"]["optimizer_state"]
check("notHanmin: optimizer state at the peak", opt > (4 << 30), repr(peak["by_role"]))
sim = json.loads(memsnap("simulate", "--format", "json", "--scale", "optimizer_state:0.125", path))
r0, r1 = sim["runs"][0], sim["runs"][1]
check("as recorded: analyze's peak", r0["peak_allocated_bytes"] == peak["allocated_bytes"],
      "%d vs %d" % (r0["peak_allocated_bytes"], peak["allocated_bytes"]))
check("as recorded: analyze's bytes by role at the peak", r0["peak_allocated_by_role"] == peak["by_role"],
      "%r vs %r" % (r0["peak_allocated_by_role"], peak["by_role"]))
drop = r0["peak_allocated_bytes"] - r1["peak_allocated_bytes"]
want = opt * 7 // 8
# The rounding: each block is its request scaled and rounded (a block's request is below its size
# by its rounding slack), and blocks placed anew may be handed out whole (up to 1 MiB more each):
# 2% of the optimizer state bounds both here.
check("0.125 of the optimizer state: the peak drops by about 7/8 of it", abs(drop - want) <= opt // 50,
      "dropped %d, 7/8 of %d is %d" % (drop, opt, want))
e = sim["role_edits"][0]
check("role_edits before", e["peak_before_bytes"] == opt, repr(e))
check("role_edits after: about 1/8", abs(e["peak_after_bytes"] - opt // 8) <= opt // 50, repr(e))
check("the peak reserved cannot drop below the segments alive when the window opened",
      r1["peak_reserved_bytes"] >= sim["start_state"]["reserved_bytes"], repr(r1))
same = json.loads(memsnap("simulate", "--format", "json", "--scale", "optimizer_state:1", path))
check("--scale optimizer_state:1 changes nothing", same["runs"][1]["layout_vs_recorded"]["identical"] is True and
      same["runs"][1]["peak_allocated_bytes"] == r0["peak_allocated_bytes"], repr(same["runs"][1]))
text = memsnap("simulate", "--scale", "optimizer_state:0.125", path)
check("the text says it is an estimate", "ESTIMATE" in text and "scaled uniformly" in text, text)
check("the text shows the role before and after",
      "%.2f GiB at the peak allocated as recorded" % (opt / (1 << 30)) in text.replace("\n  ", " "), text)
check("the text fits 80 columns", all(len(line) <= 80 for line in text.splitlines()), text)
finish()
