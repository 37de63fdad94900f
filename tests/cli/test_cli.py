#!/usr/bin/env python3
# CLI contract tests through the built binary: exit codes, one-line errors on stderr, results on stdout.
import json
import os
import pickle
import subprocess
import sys
import tempfile

from clitest import TESTDATA, check, expect_error, finish, format_size, run


snap = os.path.join(TESTDATA, "snapgen", "train.pickle")

# --- usage -------------------------------------------------------------------------------------
rc, out, err = run([])
check("no command", rc == 2 and "required" in err.lower(), "%d %r" % (rc, err))
rc, out, err = run(["--help"])
check("--help", rc == 0 and "analyze" in out and "Exit status" in out, "%d %r" % (rc, out[:300]))
rc, out, err = run(["analyze", "--help"])
check("analyze --help", rc == 0 and "--format" in out and "FILE" in out, "%d %r" % (rc, out[:300]))
# Every help fits an 80-column terminal: descriptions and the footer wrap like the options
# (a command's one-line description ran to 203 columns, the footer to 91).
for cmd in ["analyze", "diff", "segments", "timeline", "events", "flame", "callgraph", "export", "report",
            "simulate", "check", "merge", None]:
    rc, out, err = run(([cmd] if cmd else []) + ["--help"])
    wide = [line for line in out.split("\n") if len(line) > 80]
    check("%s --help fits 80 columns" % (cmd or "memsnap"), rc == 0 and out and not wide, repr(wide[:2]))
rc, out, err = run(["--version"])
check("--version", rc == 0 and out.startswith("memsnap "), "%d %r" % (rc, out))
rc, out, err = run(["analyze", "--format", "xml", snap])
check("bad --format", rc == 2 and out == "" and "--format" in err, "%d %r" % (rc, err))
rc, out, err = run(["frobnicate"])
check("unknown command", rc == 2, "%d %r" % (rc, err))

# --- --max-memory: one option in every command that loads a snapshot -------------------------------
# The same help line and default everywhere (flame, callgraph and export had a stale
# "largest decompressed input, default 16GiB" of their own), and the bound holds in each.
loaders = {"analyze": [], "segments": [], "timeline": ["-o", os.path.join(tempfile.gettempdir(), "memsnap-mm.svg")],
           "events": [], "check": ["--no-oom"], "flame": [],
           "callgraph": [], "export": ["--format", "json"], "diff": [snap]}
help_lines = set()
for cmd, extra in loaders.items():
    rc, out, err = run([cmd, "--help"])
    line = " ".join(out[out.find("--max-memory SIZE"):].split("\n  -")[0].split())
    help_lines.add(line)
    check(cmd + " --help: --max-memory", rc == 0 and "(default 4GiB)" in line, line)
    rc, out, err = run([cmd, "--max-memory", "1KiB"] + extra + [snap])
    first = err.split("\n")[0]
    # check reports a file it cannot read as ERROR on stdout, and how many on stderr.
    check(cmd + " --max-memory 1KiB", rc == 2 and (out == "") != (cmd == "check") and
          err.count("\n") == (2 if cmd == "check" else 1) and
          first.startswith("memsnap: " + snap + ": reading this input needs more than 1.00 KiB of memory") and
          first.endswith("raise the bound with --max-memory SIZE"), "%d %r" % (rc, err))
check("--max-memory: one help line", len(help_lines) == 1, str(help_lines))

# --- input errors: exactly one line, exit 2 ------------------------------------------------------
expect_error("missing file", ["analyze", "/nonexistent/snap.pickle"],
             "/nonexistent/snap.pickle: cannot open: No such file or directory")
expect_error("directory", ["analyze", TESTDATA], TESTDATA + ": is a directory")
with open(os.path.join(TESTDATA, "bad", "EXPECTED.tsv")) as f:
    rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
check("bad inputs listed", len(rows) >= 15, str(len(rows)))
for name, line in rows:
    path = os.path.join(TESTDATA, "bad", name)
    expect_error("bad/" + name, ["analyze", path], line.replace("{path}", path))

# A truncated real snapshot: the error names the offset and the opcode.
with open(snap, "rb") as f:
    data = f.read()
with tempfile.TemporaryDirectory() as tmp:
    cut = os.path.join(tmp, "cut.pickle")
    for n in (1, 2, 100, len(data) // 2, len(data) - 1):
        with open(cut, "wb") as f:
            f.write(data[:n])
        rc, out, err = run(["analyze", cut])
        check("truncated at %d" % n, rc == 2 and out == "" and err.startswith("memsnap: " + cut + ": offset ")
              and err.count("\n") == 1 and "truncated" in err, "%d %r" % (rc, err))
    # the same bytes through stdin name <stdin>
    rc, out, err = run(["analyze", "-"], stdin=data[:100])
    check("truncated stdin", rc == 2 and err.startswith("memsnap: <stdin>: offset "), "%d %r" % (rc, err))

# --- success paths ----------------------------------------------------------------------------------
rc, out, err = run(["analyze", snap])
check("analyze text", rc == 0 and "reserved" in out and err == "", "%d %r" % (rc, err))
check("analyze text fits 80 columns", max(len(l) for l in out.splitlines()) <= 80,
      max(out.splitlines(), key=len))
rc, out, err = run(["analyze", "--format", "json", snap])
check("analyze json exit", rc == 0 and err == "", "%d %r" % (rc, err))
first_json = out
doc = json.loads(out)
check("json schema_version", doc["schema_version"] == 1)
check("json tool", doc["tool"]["name"] == "memsnap" and doc["tool"]["version"])
for k in ("path", "bytes", "compression", "pickle_protocol", "form"):
    check("json input." + k, k in doc["input"], str(doc["input"]))
for k in ("reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "inactive_bytes", "segments",
          "blocks", "largest_free_block_bytes"):
    check("json totals." + k, k in doc["devices"][0]["totals"])
for k in ("entries", "first_time_us", "last_time_us"):
    check("json trace." + k, k in doc["devices"][0]["trace"])
rc2, out2, _ = run(["analyze", "--format", "json", "-"], stdin=data)
doc2 = json.loads(out2)
check("stdin equals file", rc2 == 0 and doc2["devices"] == doc["devices"] and doc2["input"]["path"] == "-")
rc, out, err = run(["analyze", "--format", "json", os.path.join(TESTDATA, "snapgen", "train_zst.pickle.zst")])
check("zstd input", rc == 0 and json.loads(out)["input"]["compression"] == "zstd", err)
rc, out3, err = run(["analyze", "--format", "json", snap])
check("deterministic", out3 == first_json)

# --- diff and its CI gate --------------------------------------------------------------------------
step4 = os.path.join(TESTDATA, "snapgen", "leak.step4.pickle")
step10 = os.path.join(TESTDATA, "snapgen", "leak.step10.pickle")
with open(os.path.join(TESTDATA, "snapgen", "leak.step4.truth.json")) as f:
    t4 = json.load(f)["per_device"][0]
with open(os.path.join(TESTDATA, "snapgen", "leak.step10.truth.json")) as f:
    t10 = json.load(f)["per_device"][0]
grew = t10["allocated"] - t4["allocated"]
rc, out, err = run(["diff", "--format", "json", step4, step10])
check("diff json exit", rc == 0 and err == "", "%d %r" % (rc, err))
doc = json.loads(out)
for k in ("schema_version", "before", "after", "devices"):
    check("diff json " + k, k in doc)
dev = doc["devices"][0]
for k in ("reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes"):
    check("diff totals_delta." + k, dev["totals_delta"][k] == t10[k.replace("_bytes", "")] - t4[k.replace("_bytes", "")],
          str(dev["totals_delta"]))
for k in ("segments_only_before", "segments_only_after", "sites"):
    check("diff json device." + k, k in dev)
for k in ("site", "stack", "before_bytes", "after_bytes", "delta_bytes", "before_allocations", "after_allocations"):
    check("diff json site." + k, k in dev["sites"][0])
rc, out, err = run(["diff", step4, step10, "--fail-if-growth", str(grew)])
check("growth at the limit passes", rc == 0 and err == "", "%d %r" % (rc, err))
rc, out, err = run(["diff", step4, step10, "--fail-if-growth", str(grew - 1)])
check("growth over the limit fails", rc == 1 and err.count("\n") == 1 and "grew by" in err and out != "",
      "%d %r" % (rc, err))
rc, out, err = run(["diff", step4, step10, "--fail-if-growth", "1KiB", "--format", "json"])
check("json and a failed gate", rc == 1 and json.loads(out)["devices"], "%d %r" % (rc, err))
rc, out, err = run(["diff", step4, step10, "--fail-if-growth", "lots"])
check("bad size", rc == 2 and "not a size" in err, "%d %r" % (rc, err))
rc, out, err = run(["diff", step4])
check("diff needs two files", rc == 2, "%d %r" % (rc, err))
rc, out, err = run(["diff", step4, step10])
check("diff text fits 80 columns", rc == 0 and max(len(l) for l in out.splitlines()) <= 80,
      max(out.splitlines(), key=len))

# --- --at: the state at an event, rebuilt by replay -------------------------------------------------
# leak.step4.pickle was dumped after the first N events of leak.pickle: analysing leak.pickle at
# event N-1 must give that dump's totals (its truth file).
leak = os.path.join(TESTDATA, "snapgen", "leak.pickle")
rc, out, err = run(["analyze", "--format", "json", step4])
n = json.loads(out)["devices"][0]["trace"]["entries"]
for cmd in ("analyze", "segments"):
    rc, out, err = run([cmd, "--format", "json", "--at", str(n - 1), leak])
    check(cmd + " --at exit", rc == 0 and err == "", "%d %r" % (rc, err))
    d = json.loads(out)["devices"][0]
    check(cmd + " --at event", d["at"]["event_index"] == n - 1, str(d.get("at")))
    if cmd == "analyze":
        for k in ("reserved", "allocated", "active", "requested"):
            check("analyze --at " + k, d["totals"][k + "_bytes"] == t4[k], "%s %s" % (d["totals"], t4))
    else:
        check("segments --at count", d["segments_total"] == t4["segments"], str(d["segments_total"]))
rc, out, err = run(["analyze", "--at", "999999", leak])
check("--at out of range", rc == 2 and "valid indices 0 to" in err and err.count("\n") == 1, "%d %r" % (rc, err))
# A device without trace entries (list.pickle: recorded without history) has no event to
# stand at; the message points at --device, since the other devices of a snapshot may have one.
rc, out, err = run(["analyze", "--at", "0", os.path.join(TESTDATA, "snapgen", "list.pickle")])
check("--at on a device without a trace", rc == 2 and err ==
      "memsnap: --at 0: device 0 has no trace entries (--device N describes one device)\n", "%d %r" % (rc, err))
# --at-time before the first timed event says where the times start (read here from the
# pickle itself); a trace without times says so.
with open(leak, "rb") as fh:
    first_time = min(e["time_us"] for e in pickle.load(fh)["device_traces"][0] if "time_us" in e)
rc, out, err = run(["analyze", "--at-time", str(first_time - 1), leak])
check("--at-time before the trace", rc == 2 and err == "memsnap: --at-time %d: device 0's first timed trace entry "
      "is at %d us\n" % (first_time - 1, first_time), "%d %r" % (rc, err))
rc, out, err = run(["analyze", "--at-time", str(first_time), "--format", "json", leak])
check("--at-time at the first timed event", rc == 0 and json.loads(out)["devices"][0]["at"]["time_us"] == first_time,
      "%d %r" % (rc, err))
rc, out, err = run(["analyze", "--at-time", "0", os.path.join(TESTDATA, "snapgen", "legacy.pickle")])
check("--at-time without times", rc == 2 and err ==
      "memsnap: --at-time 0: device 0's trace entries carry no time (use --at INDEX)\n", "%d %r" % (rc, err))
rc, out, err = run(["analyze", "--device", "7", leak])
check("--device absent", rc == 2 and "no such device" in err, "%d %r" % (rc, err))

# --- --oom-message: PyTorch's message, pasted or in a file ------------------------------------------
# capacity.pickle's OOM, worded from its truth file as PyTorch >= 2.2 does (wrapped as a log
# might wrap it): every figure matches, in the text and in JSON.
cap = os.path.join(TESTDATA, "snapgen", "capacity.pickle")
with open(os.path.join(TESTDATA, "snapgen", "capacity.truth.json")) as fh:
    ct = json.load(fh)




o, capacity = ct["oom"], ct["capacity_bytes"][ct["oom"]["device"]]
message = ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free.\n"
           "Including non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is\n"
           "allocated by PyTorch, and %s is reserved by PyTorch but unallocated." %
           (format_size(o["segment_request"]), o["device"], format_size(capacity), format_size(o["device_free"]),
            format_size(capacity - o["device_free"]), format_size(o["allocated"]),
            format_size(o["reserved"] - o["allocated"])))
msg_file = os.path.join(tempfile.mkdtemp(prefix="memsnap-cli-"), "oom.txt")
with open(msg_file, "w") as fh:
    fh.write(message)
rc, out, err = run(["analyze", "--format", "json", "--oom-message", "@" + msg_file, cap])
m = json.loads(out)["devices"][0]["oom"]["oom_message"] if rc == 0 else {}
check("--oom-message @FILE: figures match the trace's OOM",
      rc == 0 and all(m[k] is True for k in ("request_matches", "allocated_matches", "reserved_matches",
                                              "free_matches")) and m["state_differs"] is False and
      m["device"] == o["device"], "%d %r %r" % (rc, err, m))
rc, text, err = run(["analyze", "--oom-message", message, cap])
mine = text.split("your message", 1)[1].split("fix", 1)[0] if "your message" in text else ""
check("--oom-message text: checked, in 80 columns",
      rc == 0 and "this request" in mine and mine.count("matches") == 3 and "differs" not in mine and
      max(len(l) for l in text.splitlines()) <= 80, text)
rc, out, err = run(["analyze", "--oom-message", "RuntimeError: CUDA error: device-side assert triggered", cap])
check("--oom-message without 'Tried to allocate'", rc == 2 and err == 'memsnap: --oom-message: no "Tried to '
      'allocate SIZE" in the text: paste PyTorch\'s "CUDA out of memory" message whole\n', "%d %r" % (rc, err))
rc, out, err = run(["analyze", "--oom-message", "@/nonexistent/oom.txt", cap])
check("--oom-message @FILE missing", rc == 2 and err == "memsnap: --oom-message: /nonexistent/oom.txt: cannot open "
      "the file\n", "%d %r" % (rc, err))

finish()
