#!/usr/bin/env python3
# memsnap simulate on the real snapshots in ../shared/realdata (never copied into the project;
# exit 77 = SKIP when the folder is absent), issue 48: the state alive when the trace window
# opens counts against the device. The start state's reserved bytes are worked out here, apart
# from memsnap, from the file itself (the dump's segments with the trace's segment events undone
# backwards); a capacity below them is an OOM at the window's start, --min-capacity is never
# below them, no run holds more than --capacity, and a --set equal to the recorded settings
# reproduces "as recorded" in every column.
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
from skips import skip  # noqa: E402
import snapshot_totals  # noqa: E402

MEMSNAP, REAL = sys.argv[1], sys.argv[2]
if not os.path.isdir(REAL):
    skip("no real data at %s" % REAL, suite=True)
failures = []
GiB = 1 << 30


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))


def find(prefix):
    names = [f for f in sorted(os.listdir(REAL)) if f.startswith(prefix)]
    if not names:
        skip("no %s* in %s" % (prefix, REAL))
        return None
    return os.path.join(REAL, names[0])


def simulate(path, *args):
    p = subprocess.run([MEMSNAP, "simulate", "--format", "json", path] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    check("simulate %s %s" % (os.path.basename(path), " ".join(args)), p.returncode == 0,
          "exit %d: %s" % (p.returncode, p.stderr.decode()[:300]))
    return json.loads(p.stdout) if p.returncode == 0 else None


def start_reserved(path, device):
    """Bytes reserved when the trace window opened: the dump's segments, then the trace undone."""
    top, _ = snapshot_totals.load(path)
    segments = [s for s in top.get("segments", []) if s.get("device", 0) == device]
    reserved = sum(s["total_size"] for s in segments)
    for e in reversed(top["device_traces"][device]):
        if e["action"] in ("segment_alloc", "segment_map"):
            reserved -= e["size"]
        elif e["action"] in ("segment_free", "segment_unmap"):
            reserved += e["size"]
    return reserved


def start_oom(prefix, capacity):
    path = find(prefix)
    if not path:
        return
    doc = simulate(path, "--capacity", capacity)
    if not doc:
        return
    cap = doc["runs"][0]["capacity_bytes"]
    held = start_reserved(path, doc["device"])
    check(prefix + ": start state is memsnap's", doc["start_state"]["reserved_bytes"] == held,
          "%d vs %d" % (doc["start_state"]["reserved_bytes"], held))
    check(prefix + ": start state above " + capacity, held > cap, "%d vs %d" % (held, cap))
    oom = doc["runs"][0]["oom"]
    check(prefix + ": OOM at the window's start", oom is not None and oom["at_window_start"] is True and
          oom["requested_bytes"] == held, repr(oom))
    check(prefix + ": a run that cannot start holds nothing", doc["runs"][0]["peak_reserved_bytes"] == 0,
          repr(doc["runs"][0]))


start_oom("MAGMA27__assignment2-systems__memory_snapshot", "4GiB")
start_oom("LfieLike__SketchKV2__my_snapshot", "1GiB")

# --min-capacity is never below what was reserved when the window opened.
path = find("Wedsonlin__assignment2-systems__medium_1024_training")
if path:
    doc = simulate(path, "--min-capacity")
    if doc:
        held = start_reserved(path, doc["device"])
        m = doc["min_capacity_bytes"]
        check("Wedsonlin 1024 training: --min-capacity >= start state", m is not None and m >= held,
              "%r vs %d" % (m, held))
        check("Wedsonlin 1024 training: a mid-run trace", doc["starts_mid_run"] is True and held > 0)
        # and the answer runs, 2 MiB less does not
        if m:
            ok = simulate(path, "--capacity", str(m))
            below = simulate(path, "--capacity", str(m - 2 * 1024 * 1024))
            check("Wedsonlin 1024 training: the answer runs", ok and ok["runs"][0]["oom"] is None,
                  repr(ok and ok["runs"][0]["oom"]))
            check("Wedsonlin 1024 training: 2 MiB less fails", below and below["runs"][0]["oom"] is not None)


def same_columns(name, a, b):
    for k in a:
        if k in ("label", "fidelity"):
            continue
        check(name + ": " + k, a[k] == b.get(k), "%r vs %r" % (a[k], b.get(k)))


# A --set equal to the recorded settings is the recorded run, column by column.
path = find("kkaitlyn111__cs336-a2-systems__memory_2.7b_forward")
if path:
    doc = simulate(path, "--set", "expandable_segments:False")
    if doc:
        check("kkaitlyn111 2.7b: recorded without expandable segments",
              doc["recorded"]["settings"]["expandable_segments"] is False)
        same_columns("kkaitlyn111 2.7b --set expandable_segments:False", doc["runs"][0], doc["runs"][1])

# No run on a real file holds more than --capacity.
for name in ("MAGMA27__assignment2-systems__memory_snapshot", "notHanmin__assignment2-systems__memory_snapshot.",
             "Wedsonlin__assignment2-systems__medium_1024_training"):
    path = find(name)
    if not path:
        continue
    for cap in ("8GiB", "16GiB"):
        doc = simulate(path, "--capacity", cap, "--set", "expandable_segments:True")
        if doc:
            for r in doc["runs"]:
                check("%s --capacity %s %s: within the capacity" % (name, cap, r["label"]),
                      r["peak_reserved_bytes"] <= r["capacity_bytes"] == int(cap[:-3]) * GiB,
                      "%d > %r" % (r["peak_reserved_bytes"], r["capacity_bytes"]))

# Every traced device: the run with the recorded settings is identical to the trace by the
# per-alloc comparison (or, where the replay itself cannot follow the trace, names the same
# event; or compares nothing and says so), and a --set equal to the recorded settings is that run.
traced = 0
for name in sorted(f for f in os.listdir(REAL) if not f.endswith(".md")):
    path = os.path.join(REAL, name)
    p = subprocess.run([MEMSNAP, "analyze", "--format", "json", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    if p.returncode != 0:
        continue
    for d in json.loads(p.stdout)["devices"]:
        if not d.get("trace") or not d["trace"].get("entries"):
            continue
        traced += 1
        where = "%s device %d" % (name, d["device"])
        doc = simulate(path, "--device", str(d["device"]))
        if not doc:
            continue
        fid = doc["runs"][0]["fidelity"]
        top, _ = snapshot_totals.load(path)
        allocs = sum(1 for e in top["device_traces"][d["device"]] if e["action"] == "alloc")
        check(where + ": every alloc compared", fid["allocs_compared"] == allocs, "%r vs %d" % (fid, allocs))
        if fid["compared_nothing"]:
            check(where + ": nothing compared is not identical", fid["identical"] is False and allocs == 0, repr(fid))
        elif fid["replay_divergence_event"] is not None:
            check(where + ": names the replay's divergence", fid["first_divergence"] is not None and
                  fid["first_divergence"]["event_index"] == fid["replay_divergence_event"], repr(fid))
        else:
            check(where + ": identical", fid["identical"] is True and fid["allocs_matching"] == allocs, repr(fid))
        st = doc["recorded"]["settings"]
        same = "expandable_segments:" + ("True" if st["expandable_segments"] else "False")
        if st["max_split_size_bytes"]:
            same += ",max_split_size_mb:%d" % (st["max_split_size_bytes"] >> 20)
        if st["garbage_collection_threshold"]:
            same += ",garbage_collection_threshold:%g" % st["garbage_collection_threshold"]
        both = simulate(path, "--device", str(d["device"]), "--set", same)
        if both:
            same_columns(where + " --set " + same, both["runs"][0], both["runs"][1])
check("traced devices found", traced >= 20, "only %d" % traced)

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
