#!/usr/bin/env python3
# CLI tests of `memsnap segments`: exit codes, 80 columns, --top accounting, JSON shape, colour switches.
import json
import os
import subprocess
import sys

from clitest import TESTDATA, check, finish, run
REALDATA = sys.argv[3] if len(sys.argv) > 3 else None


frag = os.path.join(TESTDATA, "snapgen", "frag.pickle")
with open(os.path.join(TESTDATA, "snapgen", "frag.truth.json")) as f:
    truth = json.load(f)["per_device"][0]

rc, out, err = run(["segments", frag], {"COLUMNS": "80"})
check("segments exit", rc == 0 and err == "", "%d %r" % (rc, err))
lines = out.splitlines()
check("segments 80 columns", all(len(l) <= 80 for l in lines[1:]), max(lines[1:], key=len))
rows = [l for l in lines if l.startswith("0x")]
check("one line per segment", len(rows) == truth["segments"], len(rows))
check("legend", "'#' allocated" in out and "'+' pending free" in out and "'.' free" in out, out[:400])
check("bars", all(l.count("|") == 2 for l in rows), rows[:2])

rc, out, err = run(["segments", "--top", "3", frag], {"COLUMNS": "80"})
rows = [l for l in out.splitlines() if l.startswith("0x")]
check("--top 3 rows", len(rows) == 3, len(rows))
check("--top 3 says the rest", "%d more segments not shown" % (truth["segments"] - 3) in out, out[-300:])
rc, out, err = run(["segments", "--top", "0", frag])
check("--top 0 shows all", len([l for l in out.splitlines() if l.startswith("0x")]) == truth["segments"])

rc, out, err = run(["segments", "--format", "json", "--top", "2", frag])
doc = json.loads(out)
dev = doc["devices"][0]
check("json shape", dev["segments_total"] == truth["segments"] and dev["segments_shown"] == 2
      and len(dev["segments"]) == 2, {k: dev[k] for k in ("segments_total", "segments_shown")})
seg = dev["segments"][0]
for k in ("address", "pool", "stream", "size_bytes", "free_bytes", "stranded_bytes", "releasable_bytes",
          "fragmentation", "blocks"):
    check("json segment." + k, k in seg, sorted(seg))
check("json worst first", dev["segments"][0]["stranded_bytes"] >= dev["segments"][1]["stranded_bytes"])
check("json blocks tile", sum(b["size_bytes"] for b in seg["blocks"]) == seg["size_bytes"])

rc, out, err = run(["segments", "--format", "json", "--top", "0", frag])
segs = json.loads(out)["devices"][0]["segments"]
check("json all segments reserved", sum(s["size_bytes"] for s in segs) == truth["reserved"])
check("json all segments free", sum(s["free_bytes"] for s in segs) == truth["inactive"])

# colour only on request of a terminal: piped output never has escapes, with or without the switches
for args, env in ((["segments", frag], {}), (["segments", "--no-color", frag], {}),
                  (["segments", frag], {"NO_COLOR": "1"})):
    rc, out, err = run(args, env)
    check("no escapes %r %r" % (args[1:-1], env), rc == 0 and "\033[" not in out)

for bad, line in ((["--top", "-1"], "--top: must be 0 (all) or more, got -1"),):
    rc, out, err = run(["segments"] + bad + [frag])
    check("bad " + " ".join(bad), rc == 2 and out == "" and err == "memsnap: " + line + "\n", "%d %r" % (rc, err))
rc, out, err = run(["segments", "--top", "many", frag])
check("--top not a number", rc == 2 and out == "", "%d %r" % (rc, err))
rc, out, err = run(["segments", "/nonexistent.pickle"])
check("missing file", rc == 2 and err == "memsnap: /nonexistent.pickle: cannot open: No such file or directory\n", err)
rc, out, err = run(["--help"])
check("--help lists segments", "segments" in out)

if REALDATA and os.path.isdir(REALDATA):
    for name in sorted(os.listdir(REALDATA)):
        if not name.endswith((".pickle", ".pkl", ".json")):
            continue
        path = os.path.join(REALDATA, name)
        rc, out, err = run(["segments", path], {"COLUMNS": "80"})
        check(name + " exit", rc == 0, err)
        check(name + " 80 columns", all(len(l) <= 80 for l in out.splitlines()[1:]))
else:
    print("real files skipped: %s is absent" % REALDATA)

finish()
