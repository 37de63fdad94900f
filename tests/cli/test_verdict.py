#!/usr/bin/env python3
# Issue 49: every device of `analyze` opens with one verdict line (text "verdict: ...", JSON
# devices[].verdict.text): an OOM's event, request and cause from the snapgen truth; without an
# OOM, the peak, and the device's size only when it is known (--capacity, an OOM message): else it
# says the size is unknown, and no fix claims the job "came near its device's capacity". check
# --capacity / --min-headroom judges the headroom above the truth's reserved peak. A file without
# a trace lists what is live at the dump by site. --at/--around pick the devices holding the event.
import json
import os
import pickle
import tempfile
import re

from clitest import TESTDATA, check, expect_error, finish, run, snap


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d B" % n) if unit == "B" else "%.2f %s" % (n, unit)
        n /= 1024.0


def verdict_text(out):
    """The verdict of each device: the wrapped lines after 'device N' up to the next section."""
    found, lines = [], out.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^device \d+$", line):
            check("verdict follows " + line, i + 1 < len(lines) and lines[i + 1].startswith("  verdict: "),
                  lines[i + 1] if i + 1 < len(lines) else "")
            text = lines[i + 1].strip()
            for more in lines[i + 2:]:
                if not more.startswith("  ") or more.startswith("   ") or text.endswith("."):
                    break
                text += " " + more.strip()
            found.append(text)
    return found


# An OOM: the truth's event, request and cause.
with open(snap("frag.truth.json")) as fh:
    truth = json.load(fh)
rc, out, err = run(["analyze", snap("frag.pickle")])
v = verdict_text(out)
check("frag: one verdict", len(v) == 1, repr(v))
oom = truth["oom"]
if v:
    check("frag: request", "asking for " + human(oom["requested"]) in v[0], v[0])
    check("frag: cause", "(cause " + oom["cause"] + ")" in v[0], v[0])
    check("frag: says out of memory", v[0].startswith("verdict: out of memory at event "), v[0])
rc, out, err = run(["analyze", "--format", "json", snap("frag.pickle")])
d = json.loads(out)["devices"][0]
check("frag: JSON verdict text", d["verdict"]["text"].startswith("out of memory at event "), d["verdict"])
# the OOM event's device_free is not the device's size (memory outside PyTorch is unknown)
check("frag: JSON capacity is the OOM's", d["verdict"]["capacity_bytes"] == d["ooms"][0]["capacity_bytes"],
      "%r vs %r" % (d["verdict"], d["ooms"][0]["capacity_bytes"]))

# No OOM and no --capacity: the size is unknown, and said to be.
with open(snap("train.truth.json")) as fh:
    truth = json.load(fh)
peak = truth["per_device"][0]["peak"]["allocated_bytes"]
rc, out, err = run(["analyze", snap("train.pickle")])
v = verdict_text(out)
check("train: one verdict", len(v) == 1, repr(v))
if v:
    check("train: no OOM", v[0].startswith("verdict: no OOM; peak " + human(peak) + " allocated"), v[0])
    check("train: size unknown", "device size unknown" in v[0], v[0])
check("train: no claim about a capacity it does not know", "came near its device's capacity" not in out, out)
rc, out, err = run(["analyze", "--format", "json", snap("train.pickle")])
d = json.loads(out)["devices"][0]
check("train: JSON capacity null", d["verdict"]["capacity_bytes"] is None, d["verdict"])

# --capacity: the share of the device the peak reserved.
cap = 4 * peak
rc, out, err = run(["analyze", "--capacity", str(cap), snap("train.pickle")])
v = verdict_text(out)
rc2, js, err2 = run(["analyze", "--format", "json", "--capacity", str(cap), snap("train.pickle")])
d = json.loads(js)["devices"][0]
reserved = truth["per_device"][0]["peak"]["reserved_bytes"]
check("train --capacity: peak reserved is the truth's", d["verdict"]["peak_reserved_bytes"] == reserved, d["verdict"])
share = "%d%% of the %s device" % (round(100.0 * reserved / cap), human(cap))
check("train --capacity: share", v and share in v[0], "%r (want %r)" % (v, share))
check("train --capacity: JSON", d["verdict"]["capacity_bytes"] == cap, d["verdict"])

# -v: a healthy device's cache state in full only when asked; an OOM's always.
rc, out, err = run(["analyze", snap("train.pickle")])
HEADING = "\n  free memory by cause\n"
check("healthy: no breakdown without -v", HEADING not in out and "-v shows free memory" in out, out)
rc, out, err = run(["analyze", "-v", snap("train.pickle")])
check("healthy -v: breakdown", HEADING in out and "-v shows" not in out, out)
rc, out, err = run(["analyze", snap("frag.pickle")])
check("OOM: breakdown without -v", HEADING in out and "pinning sites" in out, out)

# A snapshot without a trace (testdata/roles/kv_cache: a serving engine's dump) still says what is
# live at the dump, by site: every allocated byte of the truth, the KV cache's site first; a block
# without a stack is "no stack recorded", never "never freed" (the dump alone cannot show that).


kv = os.path.join(TESTDATA, "roles", "kv_cache.pickle")
with open(kv.replace(".pickle", ".truth.json")) as fh:
    by = json.load(fh)["per_device"][0]["allocated_by_role"]
rc, out, err = run(["analyze", "--format", "json", kv])
d = json.loads(out)["devices"][0]
ds = d.get("dump_sites") or {"top_sites": [], "other_sites": {"live_bytes": 0}}
total = sum(x["live_bytes"] for x in ds["top_sites"]) + ds["other_sites"]["live_bytes"]
check("no trace: dump sites hold every allocated byte", total == sum(by.values()), "%d vs %r" % (total, by))
check("no trace: the KV cache's site first", ds["top_sites"] and ds["top_sites"][0]["live_bytes"] == by["kv_cache"],
      repr(ds["top_sites"][:1]))
rc, out, err = run(["analyze", kv])
check("no trace: text table", "live at the dump, by site" in out, out[-1500:])
check("no trace: no claim of never freed", "never freed" not in out and "no stack recorded" in out, out[:2000])
rc, out, err = run(["analyze", "--format", "json", snap("train.pickle")])
check("trace: dump_sites null", json.loads(out)["devices"][0]["dump_sites"] is None, "")

# --at / --around without --device on a file whose devices' traces differ (issue 49: Constructor-
# Sun's device 1 has no trace): the devices holding the event are used, the others named on stderr.


tmp = tempfile.mkdtemp(prefix="memsnap-verdict-")
with open(snap("devices2.pickle"), "rb") as fh:
    two = pickle.load(fh)
n0 = len(two["device_traces"][0])
two["device_traces"][1] = []
one_traced = os.path.join(tmp, "one_traced.pickle")
with open(one_traced, "wb") as fh:
    pickle.dump(two, fh)
at = n0 // 2
rc, out, err = run(["events", "--around", str(at), one_traced])
check("events --around: the traced device", rc == 0 and "device 0: events" in out and "device 1" not in out,
      "%d %r %r" % (rc, out[:300], err))
check("events --around: says device 1 is left out", "device 1 has no trace entries" in err, err)
rc, out, err = run(["analyze", "--format", "json", "--at", str(at), one_traced])
check("analyze --at: the traced device", rc == 0 and [d["device"] for d in json.loads(out)["devices"]] == [0],
      "%d %r" % (rc, err))
expect_error("no device holds it", ["events", "--around", str(n0 + 5), one_traced],
             "--around %d: no device's trace holds it (device 0 has %d trace entries (valid indices 0 to %d); "
             "device 1 has no trace entries)" % (n0 + 5, n0, n0 - 1))

# check --capacity / --min-headroom (issue 49): the device's size less the truth's reserved peak.
rc, out, err = run(["check", "--format", "json", "--capacity", str(cap), "--min-headroom", str(cap - reserved),
                    snap("train.pickle")])
r = json.loads(out)["results"][0] if out else {}
check("check: headroom at the limit passes", rc == 0 and r.get("status") == "pass" and
      r.get("figure") == cap - reserved and r.get("check") == "min-headroom", "%d %r" % (rc, r))
rc, out, err = run(["check", "--capacity", str(cap), "--min-headroom", str(cap - reserved + 1), snap("train.pickle")])
check("check: one byte short fails", rc == 1 and out.startswith("FAIL  headroom"), "%d %r" % (rc, out))
# --capacity alone: a tenth of it must stay free
near = reserved + reserved // 20  # 5% of the peak left: under a tenth of the device
rc, out, err = run(["check", "--format", "json", "--capacity", str(near), snap("train.pickle")])
r = json.loads(out)["results"][0] if out else {}
check("check: default a tenth", rc == 1 and r.get("limit") == near // 10 and r.get("capacity_bytes") == near,
      "%d %r" % (rc, r))
# no size known: not judged, never a pass
rc, out, err = run(["check", "--format", "json", "--min-headroom", "1GiB", snap("train.pickle")])
r = json.loads(out)["results"][0] if out else {}
check("check: unknown size is skipped", rc == 0 and r.get("status") == "skip" and "--capacity" in r.get("reason", ""),
      "%d %r" % (rc, r))
finish()
