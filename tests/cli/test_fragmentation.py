#!/usr/bin/env python3
# CLI tests of the fragmentation section of `analyze` and `analyze --fits`, through the built binary.
# Expected figures come from the snapgen truth files or are computed here from the JSON blocks.
import json
import os
import subprocess
import sys

from clitest import TESTDATA, check, expect_error, finish, run, snap
REALDATA = sys.argv[3] if len(sys.argv) > 3 else None
MiB = 1 << 20


def truth(name):
    with open(snap(name)) as f:
        return json.load(f)


def fits_80(name, out):
    # the heading names the input file, whatever its length (on a line of its own when long)
    lines = out.splitlines()
    skip = 2 if lines and lines[0].startswith("memsnap ") and len(lines) > 1 and "/" in lines[1] else 1
    long = [l for l in lines[skip:] if len(l) > 80]
    check(name + " fits 80 columns", not long, long[:2])


frag = snap("frag.pickle")
oom = truth("frag.truth.json")["oom"]

# --- analyze: the fragmentation section -----------------------------------------------------------
rc, out, err = run(["analyze", frag], {"COLUMNS": "80"})
check("analyze frag exit", rc == 0 and err == "", "%d %r" % (rc, err))
fits_80("analyze frag", out)
for words in ("free memory by cause", "stranded", "releasable", "frag = 1 - largest stranded free block / stranded bytes",
              "pinning sites", "findings", "stranded_free_memory", "expandable_segments:True", "allocator settings"):
    check("analyze frag mentions " + words, words in out, out[-400:])
check("no colour when piped", "\033[" not in out)

rc, out, err = run(["analyze", "--format", "json", frag])
doc = json.loads(out)
dev = doc["devices"][0]
fr = dev["fragmentation"]
for k in ("internal_free_bytes", "external_free_bytes", "pending_free_bytes", "releasable_bytes", "stranded_bytes",
          "largest_free_block_bytes", "pools", "pinning_sites", "regime"):
    check("json fragmentation." + k, k in fr, sorted(fr))
for k in ("pool", "stream", "segments", "reserved_bytes", "free_bytes", "largest_free_block_bytes", "fragmentation",
          "histogram"):
    check("json pools[]." + k, k in fr["pools"][0], sorted(fr["pools"][0]))
for k in ("site", "stack", "live_bytes", "stranded_bytes", "blocks"):
    check("json pinning_sites[]." + k, k in fr["pinning_sites"][0], sorted(fr["pinning_sites"][0]))
check("json largest free = truth", fr["largest_free_block_bytes"] == oom["largest_free_block"])
check("json free cached = truth", fr["external_free_bytes"] == oom["free_cached"])
check("json releasable + stranded = external",
      fr["releasable_bytes"] + fr["stranded_bytes"] == fr["external_free_bytes"])
check("json pinning sums to stranded", sum(s["stranded_bytes"] for s in fr["pinning_sites"]) == fr["stranded_bytes"])
check("json identity", dev["totals"]["requested_bytes"] + fr["internal_free_bytes"] + fr["pending_free_bytes"]
      + fr["external_free_bytes"] == dev["totals"]["reserved_bytes"])
check("json findings", "stranded_free_memory" in [f["kind"] for f in dev["findings"]], dev["findings"])
for f in dev["findings"]:
    check("json finding fields", {"advice", "kind", "message", "severity"} <= set(f), sorted(f))
check("json allocator_settings", doc["allocator_settings"]["expandable_segments"] is False, doc["allocator_settings"])
check("no fits without --fits", "fits" not in dev)
# the existing contract is untouched
for k in ("reserved_bytes", "allocated_bytes", "inactive_bytes", "largest_free_block_bytes"):
    check("json totals." + k, k in dev["totals"])

rc, out, err = run(["analyze", "--format", "json", snap("expandable.pickle")])
fr = json.loads(out)["devices"][0]["fragmentation"]
check("expandable regime", fr["regime"] == "expandable", fr["regime"])
check("expandable releasable", fr["releasable_bytes"] > 0 and fr["stranded_bytes"] > 0, fr)
rc, out, err = run(["analyze", "-v", snap("expandable.pickle")], {"COLUMNS": "80"})
check("expandable text", "expandable segments: whole free pages" in out, out[:2000])
fits_80("analyze expandable", out)

rc, out, err = run(["analyze", snap("train.pickle")])
check("healthy run: no warnings", "WARNING" not in out and "CRITICAL" not in out, out[-1500:])

# --- analyze --fits ----------------------------------------------------------------------------------
rc, out, err = run(["analyze", "--format", "json", "--fits", str(oom["requested"]), frag])
f = json.loads(out)["devices"][0]["fits"]
check("fits oom request exit", rc == 0, err)
check("fits oom request not served", f["served_from_cache"] is False, f)
check("fits oom request rounded", f["rounded_bytes"] == oom["requested_rounded"], f)
check("fits oom request new segment", f["new_segment_bytes"] == oom["segment_request"], f)
for k in ("request_bytes", "rounded_bytes", "pool", "stream", "served_from_cache", "block_address", "block_bytes",
          "new_segment_bytes"):
    check("fits." + k, k in f, sorted(f))

largest = oom["largest_free_block"]
rc, out, err = run(["analyze", "--format", "json", "--fits", str(largest), "--stream", "0", frag])
f = json.loads(out)["devices"][0]["fits"]
check("fits largest served", f["served_from_cache"] is True and f["block_bytes"] == largest, f)
rc, out, err = run(["analyze", "--format", "json", "--fits", str(largest + 1), frag])
f = json.loads(out)["devices"][0]["fits"]
rounded = largest + 512  # rule 4: below 10 MiB a 20 MiB segment, else rounded up to 2 MiB
want = (rounded + 2 * MiB - 1) // (2 * MiB) * 2 * MiB if rounded >= 10 * MiB else 20 * MiB
check("fits largest+1 not served", f["served_from_cache"] is False and f["rounded_bytes"] == largest + 512, f)
check("fits largest+1 new segment", f["new_segment_bytes"] == want, f)
rc, out, err = run(["analyze", "--fits", "1.5GiB", frag], {"COLUMNS": "80"})
check("fits text", rc == 0 and "would a request of 1.50 GiB fit?" in out and "cudaMalloc a new segment of 1.50 GiB"
      in out, out[-800:])
fits_80("fits text", out)
rc, out, err = run(["analyze", "--format", "json", "--fits", "1k", "--stream", "0x7f00", frag])
f = json.loads(out)["devices"][0]["fits"]
check("fits hex stream", rc == 0 and f["stream"] == 0x7f00 and f["served_from_cache"] is False, f)

expect_error("bad --fits", ["analyze", "--fits", "lots", frag], "--fits: not a size: 'lots' (e.g. 1.5GiB, 512MiB, 4096)")
expect_error("zero --fits", ["analyze", "--fits", "0", frag], "--fits: not a size: '0' (e.g. 1.5GiB, 512MiB, 4096)")
expect_error("bad --stream", ["analyze", "--fits", "1MiB", "--stream", "0xzz", frag],
             "--stream: not a stream: '0xzz' (decimal, or hex with 0x)")
expect_error("--stream alone", ["analyze", "--stream", "1", frag], "--stream applies only with --fits SIZE")

# --- real files: the identities hold in the JSON too ----------------------------------------------------
if REALDATA and os.path.isdir(REALDATA):
    for name in sorted(os.listdir(REALDATA)):
        if not name.endswith((".pickle", ".pkl", ".json")):
            continue
        path = os.path.join(REALDATA, name)
        rc, out, err = run(["analyze", "--format", "json", path])
        check(name + " exit", rc == 0, err)
        for dev in json.loads(out)["devices"]:
            fr = dev["fragmentation"]
            check(name + " identity", dev["totals"]["requested_bytes"] + fr["internal_free_bytes"]
                  + fr["pending_free_bytes"] + fr["external_free_bytes"] == dev["totals"]["reserved_bytes"])
            check(name + " pinning sum", sum(s["stranded_bytes"] for s in fr["pinning_sites"]) == fr["stranded_bytes"])
        rc, out, err = run(["analyze", path], {"COLUMNS": "80"})
        fits_80(name, out)
else:
    print("real files skipped: %s is absent" % REALDATA)

finish()
