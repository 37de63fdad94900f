#!/usr/bin/env python3
# `memsnap report` in a real browser (Debian's headless Chromium over the DevTools protocol).
#
#   test_report.py MEMSNAP TESTDATA REALDATA OUTDIR
#
# For every fixture and every real snapshot: the page's embedded analysis is the document
# `analyze --format json` prints; in the browser the page loads with no console error, no
# exception and no CSP violation, every figure the verdict shows (data-json) is the value at
# that path of `analyze --format json` and reads as memsnap prints it, each device's verdict
# lists its findings, and each timeline's drawn maximum is the allocated peak. On a few:
# hovering the peak shows the peak event with the stack `memsnap events --stacks` gives it;
# clicking there shows the state `analyze --at` gives (figures and segment map), and clicking
# elsewhere the nearest recorded state, said so. A snapshot with hostile names runs no script
# of theirs. Screenshots at 1280x800 are kept in OUTDIR for a person to look at.
# Exit 77 (skipped) when no Chromium is installed. With --no-browser (the ctest cli_report, which
# the sanitizer build runs too): the fixtures' pages without the browser, the bounds and the errors.
import json
import os
import pickle
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402

MEMSNAP, TESTDATA, REALDATA, OUTDIR = sys.argv[1:5]
NO_BROWSER = sys.argv[5:] == ["--no-browser"]  # cli_report: the pages without a browser (and under ASan)
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, str(detail)[:600]))
    return cond


def memsnap(args, timeout=300):
    p = subprocess.run([MEMSNAP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def human_bytes(n):  # as memsnap's human_bytes (util/units.cpp), printf's rounding
    if n < 1024:
        return "%d B" % n
    v, u = n / 1024, 0
    while v >= 1024 and u < 5:
        v /= 1024
        u += 1
    return "%.2f %s" % (v, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"][u])


def commas(n):
    return "{:,}".format(n)


def at_path(doc, path):
    for key in path.split("."):
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
    return doc


def embedded_data(html_path):
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    start = html.index('<script type="application/json" id="memsnap-data">') + len(
        '<script type="application/json" id="memsnap-data">')
    return json.loads(html[start:html.index("</script>", start)]), html


def make_report(name, files, extra=()):
    out = os.path.join(OUTDIR, name + ".html")
    rc, so, se = memsnap(["report"] + list(files) + ["-o", out, "-q"] + list(extra))
    check(name + ": report exit", rc == 0 and so == "", "%d %r" % (rc, se))
    return out if rc == 0 else None


def analyze_json(path, extra=()):
    rc, so, se = memsnap(["analyze", "--format", "json", path] + list(extra))
    check("analyze %s" % path, rc == 0, se)
    return json.loads(so) if rc == 0 else None


# ---- without the browser: the page carries analyze's document -------------------------------

def check_embedded(name, html_path, files):
    data, html = embedded_data(html_path)
    check(name + ": one script of memsnap's, one data element", html.count("<script") == 2, html.count("<script"))
    check(name + ": CSP forbids the network",
          "default-src 'none'" in html and "connect-src" not in html and "'unsafe-inline'" not in html)
    docs = []
    for k, f in enumerate(files):
        want = analyze_json(f)
        docs.append(want)
        check(name + ": embedded analysis == analyze --format json (file %d)" % k,
              data["files"][k]["analysis"] == want, "differs")
        # Every timeline's kept points hold the peak at its value, and nothing above it.
        for dj, dp in zip(want["devices"], data["files"][k]["devices"]):
            tl = dp.get("timeline")
            if tl and dj["peak"]:
                check(name + ": timeline max == peak (device %d)" % dj["device"],
                      max(tl["allocated"]) == dj["peak"]["allocated_bytes"],
                      (max(tl["allocated"]), dj["peak"]["allocated_bytes"]))
            # The flame at the dump holds the dump's allocated bytes, as `memsnap flame` sums them.
            for fl in dp.get("flames", []):
                at = {"dump": "dump", "peak": "peak", "oom": "oom"}[fl["moment"]]
                rc, so, se = memsnap(["flame", f, "--device", str(dj["device"]), "--at", at, "-q"])
                folded = sum(int(line.rsplit(" ", 1)[1]) for line in so.split("\n") if line)
                check(name + ": flame %s root == memsnap flame's sum" % at, fl["bytes"][0] == folded,
                      (fl["bytes"][0], folded))
            # The state at the dump is the dump.
            dump = [s for s in dp.get("states", []) if s["moment"] == "dump"]
            if dump:
                check_pinning(name + " (device %d)" % dj["device"], data["files"][k]["sites"], dump[0], dj)
                check(name + ": dump state == totals", (dump[0]["reserved_bytes"], dump[0]["allocated_bytes"],
                                                       dump[0]["segments"]) ==
                      (dj["totals"]["reserved_bytes"], dj["totals"]["allocated_bytes"], dj["totals"]["segments"]))
    return data, docs


def pin_rows(sites, state):
    """The fragmentation section's pinning sites of a state: (site, stranded, live, blocks, segments)."""
    return [(sites[p["site"]], p["stranded_bytes"], p["live_bytes"], p["blocks"], p["segments"])
            for p in state["pinning_sites"]]


def check_pinning(name, sites, dump, dj):
    """The page's stranded memory and pinning sites at the dump are analyze's, and add up."""
    fr = dj["fragmentation"]
    check(name + ": stranded at the dump == analyze", dump["stranded_bytes"] == fr["stranded_bytes"],
          (dump["stranded_bytes"], fr["stranded_bytes"]))
    want = [(p["site"], p["stranded_bytes"], p["live_bytes"], p["blocks"], p["segments"])
            for p in fr.get("pinning_sites", [])]
    got = pin_rows(sites, dump)
    check(name + ": pinning sites == analyze's", got == want[:len(got)] and (got or not want), (got[:3], want[:3]))
    if len(got) == len(want):  # every pinning site listed: each stranded byte is pinned by one of them
        check(name + ": pinning sites hold all that is stranded",
              sum(r[1] for r in got) == fr["stranded_bytes"], (sum(r[1] for r in got), fr["stranded_bytes"]))


# ---- in the browser ---------------------------------------------------------------------------

DOM_FIGURES = """(() => Array.from(document.querySelectorAll('#verdict [data-json]')).map(e =>
  [e.dataset.json, e.dataset.value, e.textContent]))()"""
DOM_FINDINGS = """(() => Array.from(document.querySelectorAll('#verdict .card')).map(c =>
  [c.dataset.file, c.dataset.device, Array.from(c.querySelectorAll('.finding')).map(f => f.dataset.kind),
   (c.querySelector('[data-cause]') || {dataset: {}}).dataset.cause || null,
   c.querySelector('.oombox') ? c.querySelector('.oombox').textContent : null]))()"""
DOM_PINS = """(() => Array.from(document.querySelectorAll('#fragmentation .card')).map(c =>
  [c.dataset.device, Array.from(c.querySelectorAll('[data-moment]')).filter(p => p.tagName === 'DIV').map(p =>
    [p.dataset.moment, Array.from(p.querySelectorAll('table tr.click')).map(r =>
      [r.querySelector('td.site').textContent, r.querySelector('td.r .num').dataset.value])])]))()"""
DOM_DRAWN = """(() => Array.from(document.querySelectorAll('canvas.timeline')).map(c =>
  [c.dataset.file, c.dataset.device, c.dataset.drawnMaxAllocated]))()"""


def check_page(b, name, html_path, docs, data):
    b.open("file://" + os.path.abspath(html_path))
    for _ in range(100):
        if b.eval("document.body.dataset.ready === '1' || !!document.querySelector('.error')"):
            break
        time.sleep(0.05)
    b.pump(0.2)
    check(name + ": page drawn", b.eval("document.body.dataset.ready") == "1",
          b.eval("(document.querySelector('.error') || {}).textContent"))
    check(name + ": no console error", not b.errors, b.errors)
    b.errors.clear()
    figures = b.eval(DOM_FIGURES)
    used = sum(1 for doc in docs for d in doc["devices"] if not d["unused"])
    check(name + ": verdict figures shown", len(figures) >= 5 * used, (len(figures), used))
    for path, value, text in figures:
        parts = path.split(".")
        want = at_path(docs[int(parts[1])], ".".join(parts[2:]))
        if isinstance(want, float):  # a mean or trend in bytes: shown rounded
            check(name + ": " + path, float(value) == want, (value, want))
            want = round(want)
        else:
            check(name + ": " + path, value == str(want), (value, want))
        shown = human_bytes(want) if "bytes" in parts[-1] else commas(want)
        check(name + ": " + path + " reads", text == shown, (text, shown))
    for f, dev, kinds, cause, box in b.eval(DOM_FINDINGS):
        doc = docs[int(f)]
        d = [x for x in doc["devices"] if x["device"] == int(dev)][0]
        # The OOM box is the last OOM's cause finding in full: the list leaves that one out.
        boxed = len(d["ooms"]) - 1 if d["oom"] else -1
        listed = [x["kind"] for x in d["findings"]
                  if not (x.get("oom_index", -2) == boxed and x["kind"] != "oom_retry_in_except")]
        check(name + ": findings of device %s" % dev, kinds == listed, (kinds, listed))
        check(name + ": the OOM's cause finding in the box, not the list, device %s" % dev,
              not d["oom"] or "oom_" + d["oom"]["cause"].replace("-", "_") not in kinds, kinds)
        check(name + ": OOM cause of device %s" % dev, cause == (d["oom"]["cause"] if d["oom"] else None), cause)
        # The box's largest free block is the request's pool and stream's (the tiles are the device's)
        if d["oom"] and d["oom"].get("pool"):
            o = d["oom"]
            where = "largest free block %s in the %s pool" % (human_bytes(o["largest_free_block_bytes"]), o["pool"])
            check(name + ": the OOM box names the pool of its largest free block, device %s" % dev,
                  box and where in " ".join(box.split()), (where, (box or "")[:300]))
    if len(docs) == 1:  # one file: its cards in device order
        pins = b.eval(DOM_PINS)
        any_pins = any(s["pinning_sites"] for d in data["files"][0]["devices"] for s in d.get("states", [])
                       if s["moment"] in ("dump", "oom"))
        check(name + ": the fragmentation section lists pinning sites",
              any(rows for _, parts in pins for _, rows in parts) == any_pins, pins[:2])
        for dev, parts in pins:
            for moment, rows in parts:
                d = [x for x in data["files"][0]["devices"] if x["device"] == int(dev)][0]
                st = [s for s in d["states"] if s["moment"] == moment][0]
                want = [[r[0], str(r[1])] for r in pin_rows(data["files"][0]["sites"], st)]
                check(name + ": fragmentation shows the pinning sites %s (device %s)" % (moment, dev), rows == want,
                      (rows[:3], want[:3]))
    for f, dev, drawn in b.eval(DOM_DRAWN):
        d = [x for x in docs[int(f)]["devices"] if x["device"] == int(dev)][0]
        if d["peak"]:
            check(name + ": drawn maximum == peak (device %s)" % dev, drawn == str(d["peak"]["allocated_bytes"]),
                  (drawn, d["peak"]["allocated_bytes"]))


def scroll_to(b, selector):
    b.eval("(() => { const e = document.querySelector(%s); if (e) e.scrollIntoView({block: 'start'});"
           " window.scrollBy(0, -40); })()" % json.dumps(selector))
    b.pump(0.1)


def shoot(b, name, part, selector=None):
    if selector:
        scroll_to(b, selector)
    else:
        b.eval("window.scrollTo(0, 0)")
    b.pump(0.1)
    b.screenshot(os.path.join(OUTDIR, "%s-%s.png" % (name, part)))


def check_interaction(b, name, path, doc, file_index=0):
    """Hover and click the peak of each device's timeline; click the middle of the first."""
    for d in doc["devices"]:
        if not d["peak"] or d["peak"].get("at_window_start"):
            continue  # no peak, or the window's opening: no event to hover
        dev, peak = d["device"], d["peak"]["event_index"]
        b.eval("document.querySelector('canvas.timeline[data-file=\"%d\"][data-device=\"%d\"]')"
               ".scrollIntoView({block: 'center'})" % (file_index, dev))
        pt = b.eval("memsnapReport.pointOfEvent(%d, %d, %d)" % (file_index, dev, peak))
        b.mouse("mouseMoved", pt["x"], pt["y"])
        tip = b.eval("""(() => { const c = document.querySelector('canvas.timeline[data-file="%d"][data-device="%d"]');
          const t = c.parentElement.querySelector('.tip'); const e = t.querySelector('[data-event]');
          return [t.style.display, e ? e.dataset.event : null, t.textContent,
                  Array.from(t.querySelectorAll('li:not(.sep)')).map(l => l.textContent)]; })()""" % (file_index, dev))
        check(name + ": hover shows a tooltip", tip[0] == "block", tip[0])
        check(name + ": hover at the peak shows the peak event", tip[1] == str(peak), (tip[1], peak))
        rc, so, se = memsnap(["events", path, "--device", str(dev), "--around", str(peak), "--count", "1",
                              "--stacks", "--format", "json"])
        rows = [r for r in json.loads(so)["devices"][0]["events"] if r["index"] == peak]
        if check(name + ": events lists the peak", rows, so[:300]):
            want = rows[0].get("stack", [])
            check(name + ": hover names the event", ("event %s: %s" % (commas(peak), rows[0]["action"])) in tip[2],
                  tip[2][:200])
            check(name + ": hover shows allocated after it", human_bytes(rows[0]["allocated_after_bytes"]) in tip[2])
            check(name + ": hover stack is the event's", set(tip[3]) <= set(want) and
                  len(tip[3]) == min(len(want), 16) and (want or "no stack recorded" in tip[2]), (tip[3], want))
        # A click at the peak shows the state there: as analyze --at gives it.
        b.click(pt["x"], pt["y"])
        b.pump(0.2)
        at = analyze_json(path, ["--device", str(dev), "--at", str(peak)])["devices"][0]
        check_state_panel(b, name + " click at the peak", file_index, dev, peak, at)
    b.mouse("mouseMoved", 0, 0)


def check_state_panel(b, name, file_index, dev, event, at):
    panel = b.eval("""(() => { const c = document.querySelector('canvas.timeline[data-file="%d"][data-device="%d"]');
      const p = c.closest('.card').querySelector('.statepanel'); const m = p.querySelector('canvas');
      const f = {}; p.querySelectorAll('[data-state]').forEach(e => f[e.dataset.state] = e.dataset.value);
      return [p.dataset.event, f, m ? m.dataset.segments : null, m ? m.dataset.reserved : null, p.textContent]; })()"""
                   % (file_index, dev))
    check(name + ": the panel shows the event", panel[0] == str(event), (panel[0], event))
    t = at["totals"]
    want = {"reserved_bytes": t["reserved_bytes"], "allocated_bytes": t["allocated_bytes"],
            "active_bytes": t["active_bytes"], "segments": t["segments"],
            "largest_free_block_bytes": t["largest_free_block_bytes"],
            "stranded_bytes": at["fragmentation"]["stranded_bytes"]}
    check(name + ": state figures == analyze --at", panel[1] == {k: str(v) for k, v in want.items()},
          (panel[1], want))
    check(name + ": segment map == analyze --at", (panel[2], panel[3]) == (str(t["segments"]), str(t["reserved_bytes"])),
          (panel[2], panel[3], t["segments"], t["reserved_bytes"]))
    return panel


def check_search_and_flame(b, name):
    """The search box filters the largest blocks by frame; a click on a flame frame zooms in."""
    sites = b.eval("""(() => { const s = document.getElementById('block-search'); s.value = 'train.py:59';
      s.dispatchEvent(new Event('input')); const t = s.closest('section').querySelector('table');
      return Array.from(t.querySelectorAll('tr[data-address] td.site')).map(td => td.textContent); })()""")
    rows = len(sites)
    check(name + ": search keeps the blocks whose stack has the text", rows >= 1 and
          all(x == "train.py:59:forward" for x in sites), sites)
    all_rows = b.eval("""(() => { const s = document.getElementById('block-search'); s.value = '';
      s.dispatchEvent(new Event('input'));
      return s.closest('section').querySelectorAll('tr[data-address]').length; })()""")
    check(name + ": search narrows", rows < all_rows, (rows, all_rows))
    b.eval("document.querySelector('#flame canvas').scrollIntoView({block: 'center'})")
    r = b.eval("(() => { const r = document.querySelector('#flame canvas').getBoundingClientRect();"
               " return {x: r.left + 8, y: r.bottom - 17 - 8}; })()")  # the first frame above the root
    b.click(r["x"], r["y"])
    b.pump(0.1)
    check(name + ": a click on a flame frame zooms to it",
          b.eval("document.querySelector('#flame canvas').dataset.focus") not in (None, "0"))


def check_nearest(b, name, path, data, file_index=0):
    """A click between recorded points shows the nearest one, and says so."""
    dp = [d for d in data["files"][file_index]["devices"] if d.get("timeline")][0]
    tl, dev = dp["timeline"], dp["device"]
    recorded = sorted(s["event"] for s in dp["states"] if s["event"] is not None)
    # A kept point between two recorded states, away from both.
    best = None
    for e in tl["ev"]:
        gap = min(abs(e - r) for r in recorded)
        if best is None or gap > best[0]:
            best = (gap, e)
    if not best or best[0] == 0:
        return
    event = best[1]
    b.eval("document.querySelector('canvas.timeline[data-file=\"%d\"][data-device=\"%d\"]')"
           ".scrollIntoView({block: 'center'})" % (file_index, dev))
    pt = b.eval("memsnapReport.pointOfEvent(%d, %d, %d)" % (file_index, dev, event))
    b.click(pt["x"], pt["y"])
    b.pump(0.2)
    shown = int(b.eval("""(() => { const c = document.querySelector('canvas.timeline[data-file="%d"][data-device="%d"]');
      return c.closest('.card').querySelector('.statepanel').dataset.event; })()""" % (file_index, dev)))
    # The event under the cursor may be any kept point within two pixels: the state is the
    # recorded one nearest to it, and the page says so.
    check(name + ": a click shows a recorded state", shown in recorded, (shown, recorded))
    at = analyze_json(path, ["--device", str(dev), "--at", str(shown)])["devices"][0]
    panel = check_state_panel(b, name + " click between", file_index, dev, shown, at)
    check(name + ": says the nearest recorded point", "nearest recorded point" in panel[4], panel[4][:300])


# ---- a snapshot with hostile names --------------------------------------------------------------

EVIL = ["</script><script>window.__pwned=1</script>", "<img src=x onerror=\"window.__pwned=2\">",
        "\"'><svg onload=window.__pwned=3>", "x\u2028y\u2029z</SCRIPT >", "\x1b[31mred\x00nul<!--",
        "&lt;b&gt;" + "w" * 3000]


def hostile_snapshot(path):
    frames = [{"filename": "/home/u/%s.py" % EVIL[i % len(EVIL)], "line": i + 1, "name": EVIL[i % len(EVIL)]}
              for i in range(len(EVIL))]
    base, mib = 0x7f0000000000, 1 << 20
    blocks = [{"size": mib, "state": "active_allocated", "requested_size": mib, "frames": frames[i:]} for i in range(3)]
    blocks.append({"size": mib, "state": "inactive", "requested_size": 0, "frames": []})
    trace = [{"action": "segment_alloc", "addr": base, "size": 4 * mib, "stream": 0, "time_us": 1700000000000000,
              "frames": frames}]
    for i in range(3):
        trace.append({"action": "alloc", "addr": base + i * mib, "size": mib, "stream": 0,
                      "time_us": 1700000000000100 + i, "frames": frames[i:]})
    trace.append({"action": "oom", "addr": 0, "size": 8 * mib, "stream": 0, "time_us": 1700000000000200,
                  "frames": frames})
    snap = {"segments": [{"device": 0, "address": base, "total_size": 4 * mib, "allocated_size": 3 * mib,
                          "active_size": 3 * mib, "requested_size": 3 * mib, "stream": 0, "segment_type": "large",
                          "blocks": blocks, "frames": frames}],
            "device_traces": [trace]}
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)


def check_bounds_and_errors(snap):
    # --points and --states bound what the page holds; the peak stays.
    out = make_report("bounded", [snap("frag.pickle")], ["--points", "100", "--states", "3"])
    data, html = embedded_data(out)
    dev = data["files"][0]["devices"][0]
    peak = data["files"][0]["analysis"]["devices"][0]["peak"]
    check("--points 100", len(dev["timeline"]["ev"]) <= 100 and max(dev["timeline"]["allocated"]) ==
          peak["allocated_bytes"], len(dev["timeline"]["ev"]))
    evens = [s for s in dev["states"] if s["moment"] == "even"]
    check("--states 3", len(evens) <= 3 and dev["states"][-1]["moment"] == "dump", [s["moment"] for s in dev["states"]])
    check("peak state", [s["event"] for s in dev["states"] if s["moment"] == "peak"] == [peak["event_index"]])
    # Errors: one line, exit 2, nothing written.
    target = os.path.join(OUTDIR, "never.html")
    for args, want in ((["report", snap("frag.pickle"), snap("leak.pickle"), snap("ring.pickle"), "-o", target],
                        "FILE: At Most 2 required but received 3"),
                       (["report", snap("frag.pickle"), "-o", snap("frag.pickle")], "is the input file"),
                       (["report", os.path.join(TESTDATA, "bad", "truncated.pickle"), "-o", target], "truncated"),
                       (["report", "-", "-", "-o", target], "- (stdin) can be given once")):
        rc, so, se = memsnap(args)
        check("error %s" % args[1:], rc == 2 and so == "" and want in se and not os.path.exists(target), (rc, se))
    # Standard input, and standard output.
    with open(snap("frag.pickle"), "rb") as f:
        p = subprocess.run([MEMSNAP, "report", "-", "-o", "-"], stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check("stdin to stdout", p.returncode == 0 and p.stdout.startswith(b"<!DOCTYPE html>") and not p.stderr,
          p.stderr[:300])


def main():
    os.makedirs(OUTDIR, exist_ok=True)
    snap = lambda n: os.path.join(TESTDATA, "snapgen", n)  # noqa: E731
    evil = os.path.join(OUTDIR, "evil<script>'\".pickle")
    hostile_snapshot(evil)
    # (name, files, interact, screenshots)
    cases = [("frag", [snap("frag.pickle")], True, True),
             ("leak", [snap("leak.pickle")], True, True),
             ("devices2", [snap("devices2.pickle")], True, False),
             ("expandable", [snap("expandable.pickle")], False, False),
             ("forward", [snap("forward.pickle")], False, False),
             ("ring", [snap("ring.pickle")], False, False),
             ("list", [snap("list.pickle")], False, False),
             ("nostacks", [snap("nostacks.pickle")], False, False),
             ("diff", [snap("leak.step4.pickle"), snap("leak.step10.pickle")], False, True),
             ("hostile", [evil], True, True)]
    real = sorted(f for f in os.listdir(REALDATA) if f.endswith((".pickle", ".pkl", ".json"))) \
        if os.path.isdir(REALDATA) and not NO_BROWSER else []
    shots = {"notHanmin__assignment2-systems__memory_snapshot.pickle",
             "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle"}
    for f in real:
        cases.append(("real-" + f.split(".")[0][:60], [os.path.join(REALDATA, f)], f in shots, f in shots))
    if not real and not NO_BROWSER:
        print("note: %s is absent: real snapshots not tested" % REALDATA)

    made = []
    for name, files, interact, shots_wanted in cases:
        path = make_report(name, files)
        if path:
            data, docs = check_embedded(name, path, files)
            made.append((name, files, interact, shots_wanted, path, data, docs))

    if NO_BROWSER:
        check_bounds_and_errors(snap)
        for f in failures:
            print("FAIL " + f)
        print("%d passed, %d failed" % (len(made), len(failures)))
        sys.exit(1 if failures else 0)
    if not cdp.find_browser():
        for f in failures:
            print("FAIL " + f)
        if failures:
            sys.exit(1)
        skip("no Chromium (apt-get install chromium): the pages were checked without a browser", suite=True)
    started = time.time()
    b = cdp.Browser(1280, 800)
    try:
        for name, files, interact, shots_wanted, path, data, docs in made:
            try:
                drive(b, name, files, interact, shots_wanted, path, data, docs)
            except (RuntimeError, TypeError, KeyError, IndexError, TimeoutError) as e:
                check(name + ": the page could be driven", False, e)
    finally:
        b.quit()
    print("browser: %d pages in %.1f s; screenshots in %s" % (len(made), time.time() - started, OUTDIR))
    for f in failures:
        print("FAIL " + f)
    failed = {f.split(":", 1)[0] for f in failures}
    print("%d passed, %d failed" % (len([m for m in made if m[0] not in failed]), len(failed)))
    sys.exit(1 if failures else 0)


def drive(b, name, files, interact, shots_wanted, path, data, docs):
    """One page in the browser: its checks, its interactions, its screenshots."""
    check_page(b, name, path, docs, data)
    if name == "hostile":
        check(name + ": no script of the snapshot ran", b.eval("window.__pwned === undefined"),
              b.eval("String(window.__pwned)"))
        check(name + ": only the page's script", b.eval("document.scripts.length") == 2)
        check(name + ": hostile names shown as text",
              b.eval("document.body.textContent.includes('</script><script>window.__pwned=1</script>')"))
        check(name + ": title escaped", b.eval("document.title").startswith("memsnap report: ") and
              "<script>'\"" in b.eval("document.title"))
    if interact:
        check_interaction(b, name, files[0], docs[0])
        if name in ("frag", "leak"):
            check_nearest(b, name, files[0], data)
    if name == "frag":
        check_search_and_flame(b, name)
    if shots_wanted:
        shoot(b, name, "1-verdict")
        shoot(b, name, "2-timeline", "#timeline")
        shoot(b, name, "3-state", ".statepanel h4")
        shoot(b, name, "4-flame", "#flame")
        shoot(b, name, "5-fragmentation", "#fragmentation")
        if name == "diff":
            shoot(b, name, "6-diff", "#diff")
    b.pump(0.1)
    check(name + ": no console error after the interactions", not b.errors, b.errors)
    b.errors.clear()


main()
