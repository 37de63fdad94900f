#!/usr/bin/env python3
"""Every real snapshot in ../shared/realdata: sites are the user's code, text fits 80 columns.

  realdata_sites.py MEMSNAP ORACLE_DIR REALDATA

- analyze --format json: every object naming a `site` with its `stack` names a frame of the
  user's code when the stack holds one (user frames judged here, independently, from the
  full paths the snapshot records), and `user_site` says so;
- callgraph --format json: every frame's `kind` is the user/library/torch/python/native
  judged here (Lightning, Hydra, timm, transformers, accelerate, DeepSpeed are library);
- no line over 80 columns (COLUMNS=80) in the text of analyze, segments, events (plain,
  --stacks, --around peak, --around oom), diff (each file against the next), callgraph.
Exits 77 (ctest SKIP) when REALDATA is absent.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402

LIBRARY_DIRS = ("lightning", "pytorch_lightning", "lightning_fabric", "hydra", "timm", "transformers",
                "accelerate", "deepspeed", "omegaconf", "lightning_utilities")
NOISE_FILES = ("core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c", "Objects/call.c",
               "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h")


def generated(path):
    """Code torch.compile (inductor's cache: torchinductor_<user>/, or <2 letters>/c<hash>.py
    under any directory) or torch.fx (<eval_with_key>.N) wrote at run time."""
    p = path.replace("\\", "/")
    if p.startswith("<eval_with_key>"):
        return True
    if not p.endswith(".py"):
        return False
    if "/torchinductor_" in p or p.startswith("torchinductor_"):
        return True
    return re.search(r"(^|/)([a-z0-9]{2})/c\2[a-z0-9]{37,}\.py$", p) is not None


def kind(path):
    """The frame kind, from the recorded file name alone (docs/analyze.md, "Sites")."""
    if generated(path):
        return "torch"
    p = path.replace("\\", "/")
    python = p.endswith(".py") or (len(p) > 1 and p[0] == "<" and p[-1] == ">")
    if not python:
        return "native"
    if p.startswith("<frozen"):
        return "python"
    if "/torch/" in p or p.startswith("torch/"):
        return "torch"
    if "/site-packages/" in p or "/dist-packages/" in p:
        return "library"
    if "/lib/python2" in p or "/lib/python3" in p or "/lib/pypy" in p:
        return "python"
    parts = p.split("/")[:-1]
    if any(d in LIBRARY_DIRS for d in parts):
        return "library"
    return "user"


def frame_text(f):
    base = f["filename"].replace("\\", "/").rsplit("/", 1)[-1]
    if f["filename"] in ("", "??") and f.get("line", 0) == 0:
        return f["name"]
    return "%s:%d:%s" % (base, f.get("line", 0), f["name"])


def frames_of(top):
    """Every frame dict of the snapshot (blocks and trace entries)."""
    segments = top.get("segments", []) if isinstance(top, dict) else top
    for seg in segments:
        for b in seg.get("blocks", []):
            for f in b.get("frames", []) or []:
                yield f
            for h in b.get("history", []) or []:
                for f in h.get("frames", []) or []:
                    yield f
    if isinstance(top, dict):
        for trace in top.get("device_traces", []) or []:
            for e in trace or []:
                for f in e.get("frames", []) or []:
                    yield f


def walk(doc):
    if isinstance(doc, dict):
        yield doc
        for v in doc.values():
            yield from walk(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from walk(v)


def width(line):
    return len(line)


def peak_tables(text):
    """The 'live at the peak, by site' tables of analyze's text, one string per device."""
    tables, cur = [], None
    for line in text.splitlines():
        if line.strip().startswith("live at the peak, by site"):
            cur = []
            tables.append(cur)
        elif cur is not None and (not line.startswith("    ") or not line.strip()):
            cur = None
        elif cur is not None:
            cur.append(line)
    return ["\n".join(t) for t in tables]


# A forward pass under torch.compile: its stacks run inductor's generated modules
# (/tmp/torchinductor_c-kaitwang/p6/cp6jhjzn….py) called from the user's transformer.py.
COMPILED = "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle"
GENERATED_CONTEXT = {"inductor": "compiled graph (torch.compile)", "fx": "fx graph (torch.fx)"}


def compiled_checks(name, top, doc, fail):
    """No site names a generated module; a site whose stack runs one inside it is the user's
    frame, "via" the compiled graph; the user's forward is such a site. Returns the sites checked."""
    gen, kinds = {}, {}  # frame text -> "inductor" / "fx"; frame text -> its kind
    for f in frames_of(top):
        kinds.setdefault(frame_text(f), kind(f.get("filename", "")))
        if generated(f.get("filename", "")):
            gen[frame_text(f)] = "fx" if f["filename"].startswith("<eval_with_key>") else "inductor"
    if not gen:
        fail("%s: no generated frame in the snapshot" % name)
        return 0
    checked, forwards = 0, set()
    for obj in walk(doc):
        site, stack = obj.get("site"), obj.get("stack")
        if not isinstance(site, str):
            continue
        checked += 1
        if site in gen or "torchinductor" in site or site.split(":")[0] in {t.split(":")[0] for t in gen}:
            fail("%s: site %r is a generated module" % (name, site))
        if not isinstance(stack, list) or site not in stack:
            continue
        inner = [gen[t] for t in stack[:stack.index(site)] if t in gen]
        if inner and "library_context" in obj and obj["library_context"] != GENERATED_CONTEXT[inner[-1]]:
            fail("%s: site %r runs a generated module but is via %r" % (name, site, obj["library_context"]))
        if inner and kinds.get(site) == "user" and site.endswith(":forward"):
            forwards.add(site)
    if not any(s.startswith("transformer.py:") for s in forwards):
        fail("%s: no site is the user's transformer.py forward that ran the compiled graph (%r)" %
             (name, sorted(forwards)))
    return checked


def run(cmd):
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1", LC_ALL="C.UTF-8")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def main():
    memsnap, oracle_dir, realdata = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.isdir(realdata):
        skip("%s is absent" % realdata, suite=True)
    sys.path.insert(0, oracle_dir)
    import snapshot_totals  # noqa: E402

    files = sorted(os.path.join(realdata, f) for f in os.listdir(realdata)
                   if f.endswith((".pickle", ".pkl", ".json")))
    errors = checked_sites = checked_frames = checked_lines = checked_vias = checked_compiled = 0

    def fail(msg):
        nonlocal errors
        errors += 1
        if errors <= 40:
            print("FAIL " + msg)

    for i, path in enumerate(files):
        name = os.path.basename(path)
        top, _ = snapshot_totals.load(path)
        user, other = set(), set()
        for f in frames_of(top):
            if any(n in f.get("filename", "") for n in NOISE_FILES):
                continue
            (user if kind(f.get("filename", "")) == "user" else other).add(frame_text(f))
        user_only = user - other  # a string both kinds share cannot tell

        rc, out, err = run([memsnap, "analyze", "--format", "json", path])
        if rc != 0:
            fail("%s: analyze exit %d: %s" % (name, rc, err.strip()))
            continue
        for obj in walk(json.loads(out)):
            site, stack = obj.get("site"), obj.get("stack")
            if not isinstance(site, str) or not isinstance(stack, list):
                continue
            checked_sites += 1
            if any(s in user_only for s in stack):
                if site not in user:
                    fail("%s: site %r is not the user's code; its stack has %r" %
                         (name, site, [s for s in stack if s in user_only][0]))
                elif obj.get("user_site") != site:
                    fail("%s: site %r: user_site is %r" % (name, site, obj.get("user_site")))

        if name == COMPILED:
            checked_compiled += compiled_checks(name, top, json.loads(out), fail)

        # the text's peak table names each site's library call ("via ...") as the JSON does
        rc, text, err = run([memsnap, "analyze", path])
        tables = peak_tables(text)
        for dev, table in zip([d for d in json.loads(out)["devices"] if d.get("peak") and d["peak"]["top_sites"]],
                              tables):
            for s in dev["peak"]["top_sites"]:
                ctx = s.get("library_context")
                checked_vias += 1
                if ctx and 4 + len(ctx) <= 74 and ("via " + ctx) not in table:
                    fail("%s: device %d: peak site %r: 'via %s' is not in the text" % (name, dev["device"],
                                                                                     s["site"], ctx))
            want = sum(1 for s in dev["peak"]["top_sites"] if s.get("library_context"))
            if table.count("via ") != want:
                fail("%s: device %d: %d 'via' in the peak table, %d sites with a library call" %
                     (name, dev["device"], table.count("via "), want))

        rc, out, err = run([memsnap, "callgraph", "--format", "json", path])
        if rc != 0:
            fail("%s: callgraph exit %d: %s" % (name, rc, err.strip()))
        else:
            doc = json.loads(out)
            for f in doc.get("vertices", []):
                if f.get("file") is None or f.get("kind") in ("synthetic", "root"):
                    continue
                checked_frames += 1
                if f["kind"] != kind(f["file"]):
                    fail("%s: callgraph frame %s (%s) is %r, not %r" % (name, f.get("function"), f["file"],
                                                                        f["kind"], kind(f["file"])))

        commands = [["analyze"], ["segments"], ["events"], ["events", "--stacks"], ["events", "--around", "peak"],
                    ["events", "--around", "oom"], ["callgraph"], ["callgraph", "--at", "peak"]]
        runs = [[memsnap] + c + [path] for c in commands]
        runs.append([memsnap, "diff", path, files[(i + 1) % len(files)]])
        for cmd in runs:
            rc, out, err = run(cmd)
            shown = " ".join(cmd[1:-1] if cmd[1] != "diff" else ["diff"]) + " " + name
            if rc >= 3:
                fail("%s: exit %d: %s" % (shown, rc, err.strip()))
                continue
            for n, line in enumerate(out.splitlines(), 1):
                checked_lines += 1
                if width(line) > 80:
                    fail("%s: line %d is %d columns: %s" % (shown, n, width(line), line))
                    break
    print("%d files, %d sites, %d peak sites' library calls, %d call graph frames, %d lines, %d sites of a compiled "
          "model checked; %d failures" % (len(files), checked_sites, checked_vias, checked_frames, checked_lines,
                                          checked_compiled, errors))
    print("%d passed, %d failed" % (len(files) if not errors else 0, 1 if errors else 0))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
