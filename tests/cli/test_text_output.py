#!/usr/bin/env python3
# Text output users read in a terminal: every line within 80 columns on every fixture and
# real snapshot, and nothing from a file can reach the terminal raw (escape sequences,
# newlines, C1 controls) or break the one-line error contract.
import glob
import os
import pickle
import re
import sys
import tempfile

from clitest import TESTDATA, check, finish, run, skip

REALDATA = sys.argv[3] if len(sys.argv) > 3 else ""
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
from snapshot_totals import load  # noqa: E402  (the safe loader)

files = sorted(glob.glob(os.path.join(TESTDATA, "snapgen", "*.pickle*")))
# Recording started after the model was built, as in most real files: train.pickle with no stack
# on any block of the state and the trace's first half gone, so the blocks allocated then (the
# weights) have no stack anywhere while the later events keep theirs.
tmpdir = tempfile.TemporaryDirectory(prefix="memsnap-text-")
late = os.path.join(tmpdir.name, "recording_started_late.pickle")
doc, _ = load(os.path.join(TESTDATA, "snapgen", "train.pickle"))
for seg in doc["segments"]:
    for b in seg["blocks"]:
        b["frames"] = []
doc["device_traces"][0] = doc["device_traces"][0][len(doc["device_traces"][0]) // 2:]
with open(late, "wb") as f:
    pickle.dump(doc, f, protocol=4)
files.append(late)
if REALDATA and os.path.isdir(REALDATA):
    files += sorted(f for f in glob.glob(os.path.join(REALDATA, "*")) if not f.endswith(".md"))
else:
    skip("the real snapshots (%s) are absent" % REALDATA)

env = {"COLUMNS": "80"}
for f in files:
    name = os.path.basename(f)
    for args in (["analyze", f], ["segments", f], ["events", "--around", "peak", "--stacks", f],
                 ["diff", f, f], ["callgraph", f]):
        rc, out, err = run(args, env)
        check("%s %s exit" % (args[0], name), rc == 0, "%d %r" % (rc, err[:300]))
        wide = [l for l in out.splitlines() if len(l) > 80]
        check("%s %s fits 80 columns" % (args[0], name), not wide, wide[:2])
        check("%s %s has no control characters" % (args[0], name), not CONTROL.search(out), "")

# The peak's `<no stack recorded>` row says why, from what the trace shows (analyze's JSON):
# every allocation in it carries a stack (so those blocks predate its first event), or none.
import json
notes = 0
for f in files:
    rc, out, err = run(["analyze", "--format", "json", f])
    devices = json.loads(out)["devices"] if rc == 0 else []
    if len(devices) != 1:
        continue
    it = devices[0].get("iterations", {})
    n, with_stack = it.get("allocations", 0), it.get("allocations_with_stack", 0)
    want = ("allocated before the trace's first event" if n and with_stack == n else
            "the trace was recorded without stacks" if n and with_stack == 0 else "")
    lines = run(["analyze", f], env)[1].splitlines()
    rows = [i for i, l in enumerate(lines) if l.startswith("    <no stack recorded>") and l.split()[-1].isdigit()
            and "live at the peak" in "".join(lines[max(0, i - 12):i])]
    for i in rows:
        got = lines[i + 1].strip() if i + 1 < len(lines) else ""
        ok = got.startswith(want) if want else not (got.startswith("allocated before") or "without stacks" in got)
        check("%s: the no-stack peak row says why" % os.path.basename(f), ok, "%r, want %r" % (got, want))
        notes += bool(want)
check("no-stack notes seen", notes >= 1, str(notes))

# The pinning table's `<no stack recorded>` row says why too, from the file itself (its export
# in PyTorch's schema): some segment, block or trace event has a stack (those blocks were
# allocated while recording was off: before it began or after it stopped), or none has.
pin_notes = {True: 0, False: 0}
for f in files:
    rc, out, err = run(["export", "--format", "json", f])
    doc = json.loads(out) if rc == 0 else {}
    if len(doc.get("device_traces", [])) > 1 or not doc:
        continue
    recorded = any(s.get("frames") or any(b.get("frames") for b in s["blocks"]) for s in doc["segments"]) or \
        any(e.get("frames") for t in doc.get("device_traces", []) for e in t)
    want = "allocated while memory history recording was off" if recorded else "this file has no stacks"
    lines = run(["analyze", "-v", f], env)[1].splitlines()
    def paragraph_head(i):  # the first line of the blank-line-separated section holding line i
        while i > 0 and lines[i - 1].strip():
            i -= 1
        return lines[i]

    rows = [i for i, l in enumerate(lines) if l.startswith("    <no stack recorded>")
            and paragraph_head(i).startswith("  pinning sites:")]
    for i in rows:
        got = lines[i + 2].strip() if i + 2 < len(lines) else ""
        check("%s: the no-stack pinning row says why" % os.path.basename(f), got.startswith(want),
              "%r, want %r" % (got, want))
        pin_notes[recorded] += 1
check("no-stack pinning notes seen, both kinds", pin_notes[True] >= 1 and pin_notes[False] >= 1, str(pin_notes))

# A hostile snapshot: control characters, an escape sequence and newlines in every
# string a report prints (file and function names, the allocator settings, an action).
ESC = "\x1b]0;pwned\x07\x1b[2J"
frames = [{"filename": "/w/ev\x1bil\n.py", "line": 7, "name": "fn" + ESC + "\nmemsnap: everything is fine"},
          {"filename": "/w/train\u009b.py", "line": 9, "name": "main\r"}]
block = {"address": 0x7F0000000000, "size": 1 << 20, "requested_size": 1 << 20, "state": "active_allocated",
         "frames": frames}
free = {"address": 0x7F0000100000, "size": 1 << 20, "requested_size": 0, "state": "inactive", "frames": []}
snap = {
    "segments": [{"device": 0, "address": 0x7F0000000000, "total_size": 2 << 20, "allocated_size": 1 << 20,
                  "active_size": 1 << 20, "requested_size": 1 << 20, "stream": 0, "segment_type": "large",
                  "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames, "blocks": [block, free]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": 0x7F0000000000, "size": 2 << 20, "stream": 0, "frames": frames,
         "time_us": 1700000000000000},
        {"action": "alloc", "addr": 0x7F0000000000, "size": 1 << 20, "stream": 0, "frames": frames,
         "time_us": 1700000000000010},
        {"action": "annotate\x1b[31m", "addr": 0, "size": 0, "stream": 0, "frames": frames,
         "time_us": 1700000000000020},
    ]],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False" + ESC + "\nforged line",
                           "max_split_size": -1, "expandable_segments": False,
                           "garbage_collection_threshold": 0.0, "roundup_power2_divisions": {}},
}
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "hostile.pickle")
    with open(path, "wb") as fh:
        pickle.dump(snap, fh, protocol=4)
    for args in (["analyze", path], ["segments", path], ["events", "--stacks", path], ["diff", path, path],
                 ["analyze", "--oom-size", "4MiB", path]):
        rc, out, err = run(args, env)
        check("hostile %s exit" % args[0], rc == 0, "%d %r" % (rc, err[:300]))
        for stream, text in (("stdout", out), ("stderr", err)):
            check("hostile %s %s: no raw control characters" % (args[0], stream), not CONTROL.search(text),
                  repr(CONTROL.search(text).group(0)) if CONTROL.search(text) else "")
            check("hostile %s %s: no forged line" % (args[0], stream),
                  not any(l.startswith("memsnap: everything") or l.startswith("forged line")
                          for l in text.splitlines()), "")
        check("hostile %s shows the escape escaped" % args[0], "\\x1b" in out or args[0] in ("segments", "diff"), out[:200])
    # JSON keeps the strings exactly (escaped by JSON's own rules).
    rc, out, err = run(["analyze", "--format", "json", path])
    import json
    doc = json.loads(out)
    check("hostile json keeps the conf", doc["allocator_settings"]["PYTORCH_CUDA_ALLOC_CONF"].endswith("forged line"))
    # An error naming a hostile file name is one line.
    bad = os.path.join(tmp, "x\x1b[2J\nmemsnap: ok.pickle")
    with open(bad, "wb") as fh:
        fh.write(b"\x80\x04K")
    rc, out, err = run(["analyze", bad])
    check("hostile file name: exit 2", rc == 2, "%d" % rc)
    check("hostile file name: one error line", err.count("\n") == 1 and not CONTROL.search(err), repr(err))

# events --stacks: a C++ name wider than the line breaks at a space or after a "::", ",",
# "<" or "(", never inside an identifier. Each long frame of the JSON stacks is found in
# the text as consecutive pieces, and every break between two pieces is at such a place.
cpp = os.path.join(TESTDATA, "snapgen", "cpp.pickle")
rc, out, err = run(["events", "--stacks", "--count", "4", cpp], env)
rc, js, err = run(["events", "--stacks", "--count", "4", "--format", "json", cpp], env)
import json  # noqa: E402
long_frames = sorted({f for d in json.loads(js)["devices"] for e in d["events"] for f in e.get("stack", [])
                      if len(f) > 80 - 13})
text = [l.strip() for l in out.splitlines()]
check("stacks: long C++ frames to wrap", len(long_frames) >= 3, long_frames)
for f in long_frames:
    cuts = None
    for k, first in enumerate(text):
        if not first or len(first) >= len(f) or not f.startswith(first):
            continue
        pos, cuts, j = len(first), [len(first)], k + 1
        while pos < len(f) and j < len(text) and text[j] and f[pos:].lstrip(" ").startswith(text[j]):
            pos += len(f[pos:]) - len(f[pos:].lstrip(" ")) + len(text[j])
            cuts.append(pos)
            j += 1
        if pos == len(f):
            break
        cuts = None
    check("stacks: %s... in the text" % f[:40], cuts is not None, out[:400])
    for c in (cuts or [])[:-1]:
        check("stacks: %s... breaks at a separator" % f[:40], f[c - 1] in ":,<( " or f[c] == " ",
              "%r | %r" % (f[:c], f[c:]))
# events --around oom on a file without an OOM: one line on stderr, exit 2, nothing on stdout.
for fmt in ([], ["--format", "json"]):
    rc, out, err = run(["events", "--around", "oom"] + fmt + [os.path.join(TESTDATA, "snapgen", "train.pickle")], env)
    check("around oom without one: exit 2 %s" % fmt, rc == 2 and out == "", "%d %r" % (rc, out[:200]))
    check("around oom without one: one line %s" % fmt,
          err == "memsnap: --around oom: the trace records no OOM event (--around peak lists what led to the peak)\n",
          repr(err))
rc, out, err = run(["events", "--around", "oom", "--count", "3", os.path.join(TESTDATA, "snapgen", "frag.pickle")], env)
check("around oom with one: exit 0", rc == 0 and "around oom" in out, "%d %r" % (rc, err))

finish()
