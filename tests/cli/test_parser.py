#!/usr/bin/env python3
# --parser general (the unpickler and the schema walk alone) gives byte-identical output to
# the default (the fast path, handing over where it must) on every fixture and every real
# file: analyze's JSON, the exported model (every table and id), and, for a bad input, the
# same error line and exit status. --parser fast gives the same output wherever it reads the
# input, and otherwise one error line. The real files part is skipped (with a message) where
# ../shared/realdata is absent; the fixtures always run, so the test never passes on nothing.
import glob
import os
import tempfile

from clitest import TESTDATA, check, failures, finish, run, skip

REALDATA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                                         "realdata"))
SNAPSHOT_EXT = (".pickle", ".pkl", ".json", ".gz", ".zst")


def inputs():
    found = sorted(p for p in glob.glob(os.path.join(TESTDATA, "**", "*"), recursive=True)
                   if os.path.isfile(p) and p.endswith(SNAPSHOT_EXT) and "/gen/" not in p and "/fleet/" not in p)
    real = sorted(glob.glob(os.path.join(REALDATA, "*"))) if os.path.isdir(REALDATA) else []
    return found, [p for p in real if p.endswith(SNAPSHOT_EXT)]


def outputs(path, parser, tmp):
    """(analyze rc, stdout, stderr, export rc, exported bytes, stderr) with --parser `parser` (None: default)."""
    opt = ["--parser", parser] if parser else []
    a = run(["analyze", "--format", "json"] + opt + [path], timeout=600)
    out = os.path.join(tmp, "export.pickle")  # one name: export says it on stderr
    if os.path.exists(out):
        os.remove(out)
    rc, _, err = run(["export", "--format", "pickle", "-o", out] + opt + [path], timeout=600)
    data = open(out, "rb").read() if rc == 0 else b""
    return a + (rc, data, err)


fixtures, real = inputs()
checked = 0
with tempfile.TemporaryDirectory() as tmp:
    for path in fixtures + real:
        name = os.path.relpath(path, os.path.dirname(TESTDATA)) if path in fixtures else os.path.basename(path)
        default = outputs(path, None, tmp)
        general = outputs(path, "general", tmp)
        check(name + ": --parser general == default", general == default,
              "analyze rc %d/%d, export rc %d/%d, stderr %r / %r" % (general[0], default[0], general[3], default[3],
                                                                     general[2][-200:], default[2][-200:]))
        fast = outputs(path, "fast", tmp)
        if fast[0] == 0:
            check(name + ": --parser fast == default", fast == default, "outputs differ")
        else:
            check(name + ": --parser fast gives way with one error line",
                  fast[0] == 2 and fast[1] == "" and fast[2].count("\n") == 1 and "--parser fast" in fast[2]
                  or fast[2] == default[2], fast[2][-300:])
        checked += 1
check("fixtures were found", len(fixtures) >= 20, "%d fixtures under %s" % (len(fixtures), TESTDATA))
print("%d inputs compared (%d fixtures, %d real files)" % (checked, len(fixtures), len(real)))
if not real:
    skip("real files: %s is absent" % REALDATA)
finish()
