#!/usr/bin/env python3
"""Resource tests: small hostile inputs, generated here at test time, must finish in seconds
within the memory bound, with one line on stderr and exit status 2 (or 0 where the input is
fine). Each run is under RLIMIT_AS (ulimit -v) and a timeout.

Usage: input_attacks.py MEMSNAP [SCALE]

SCALE > 1 marks a sanitizer build: time bounds are multiplied by it, and the
address-space limit and the RSS peak check are left out (AddressSanitizer reserves
terabytes of shadow address space and keeps freed memory in quarantine), so there
memsnap's own --max-memory budget is what bounds it.
"""
import gzip
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

MEMSNAP = sys.argv[1]
SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
SANITIZED = SCALE > 1
AS_LIMIT = 3 << 30
failures = 0
passed = 0


def limit():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(args, stdin=None, timeout=30):
    timeout *= SCALE
    t = time.time()
    p = subprocess.run([MEMSNAP] + args, stdin=stdin, capture_output=True, preexec_fn=limit, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), time.time() - t


def check(name, ok, detail=""):
    global failures, passed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failures += 1
        print("FAIL " + name + ": " + detail[:500])


def one_line_error(rc, err, *fragments):
    return rc == 2 and err.count("\n") == 1 and err.startswith("memsnap: ") and all(f in err for f in fragments)


def short_str(s):
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


with tempfile.TemporaryDirectory() as tmp:
    def write(name, data):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    # 1. Hash flooding the memo: LONG_BINPUT indices far beyond the bytes read go to the
    #    sparse map; these are all multiples of one large number (identity-hash collisions).
    body = bytearray(b"\x80\x02]q\x00(")
    for k in range(1, 150001):
        body += b"K\x01r" + struct.pack("<I", (k * 28657) & 0xFFFFFFFF | 0x80000000) + b"0"
    body += b"e."
    path = write("put_flood.pickle", bytes(body))
    rc, out, err, dt = run(["analyze", path])
    check("memo PUT flood finishes in seconds", dt < 10 * SCALE and rc in (0, 2), "%.1fs rc=%d %s" % (dt, rc, err))

    # 2. A zstd frame whose header claims 15 GiB: never presized from the header.
    frame = b"\x28\xb5\x2f\xfd" + b"\xe0" + struct.pack("<Q", 15 << 30) + b"\x09\x00\x00" + b"."
    path = write("claims_15g.zst", frame)
    rc, out, err, dt = run(["analyze", path])
    check("zstd header claiming 15 GiB", one_line_error(rc, err, "zstd") and dt < 5 * SCALE, "%.1fs rc=%d %s" % (dt, rc, err))

    # 3. A gzip bomb (200 MB of zeros): decompressed once, no 2x copies, then refused.
    bomb = gzip.compress(b"\x00" * (200 << 20), 9)
    path = write("bomb.gz", bomb)
    t0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rc, out, err, dt = run(["analyze", path])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    check("gzip bomb: one error line", one_line_error(rc, err, "decoded offset 0"), "rc=%d %s" % (rc, err))
    if SANITIZED:
        print("SKIPPED under a sanitizer: gzip bomb RSS peak (ASan's shadow and quarantine)")
    else:
        check("gzip bomb: peak memory about the decompressed size (no 2x copies)", peak < 300 << 20,
              "peak %d MiB" % (peak >> 20))
    check("gzip bomb: refused at its first decoded byte", "not a snapshot" in err and "starts with bytes 00" in err,
          err)
    # The same bomb behind a PROTO header (plausible as a pickle): --max-memory stops the decoding.
    path = write("proto-bomb.gz", gzip.compress(b"\x80\x04" + b"\x00" * (200 << 20), 9))
    rc, out, err, dt = run(["analyze", "--max-memory", "64MiB", path])
    check("gzip bomb: --max-memory stops it", one_line_error(rc, err, "--max-memory"), "rc=%d %s" % (rc, err))

    # 4. "]0" repeated: each EMPTY_LIST is a node even when popped; counted against the bound.
    lists = gzip.compress(b"\x80\x04" + b"]0" * (50 << 20) + b"N.", 9)
    path = write("lists.pickle.gz", lists)
    rc, out, err, dt = run(["analyze", "--max-memory", "256MiB", path])
    check("']0' repeated counts against --max-memory", one_line_error(rc, err, "--max-memory") and dt < 20 * SCALE,
          "%.1fs rc=%d %s" % (dt, rc, err))

    # 5. Standard input from /dev/zero stops at its first byte (0x00 starts no pickle and no JSON).
    with open("/dev/zero", "rb") as zero:
        rc, out, err, dt = run(["analyze", "--max-memory", "64MiB", "-"], stdin=zero)
    check("stdin from /dev/zero stops at its first byte", one_line_error(rc, err, "offset 0: not a snapshot") and
          dt < 10 * SCALE, "%.1fs rc=%d %s" % (dt, rc, err))

    # 6. One blocks list shared by many segments, with a padded string to raise the element
    #    budget: the model it would expand to is counted against the bound.
    seg = (b"}\x94(" + short_str("total_size") + b"\x94J\x00\x00\x00\x01" + short_str("blocks") + b"\x94]\x94(" +
           b"".join(b"}(" + short_str("size") + b"J\x00\x00\x01\x00" + short_str("state") + short_str("inactive") + b"u"
                    for _ in range(2000)) + b"eu")
    body = b"\x80\x04}\x94(" + short_str("segments") + b"]\x94(" + seg + b"h\x05" * 60000 + b"e" + short_str("pad")
    body += b"\x8d" + struct.pack("<Q", 64 << 20) + b"x" * (64 << 20) + b"u."
    path = write("shared_blocks.pickle.gz", gzip.compress(body, 6))
    rc, out, err, dt = run(["analyze", "--max-memory", "1GiB", path])
    check("shared blocks list: bounded", rc == 2 and err.count("\n") == 1 and dt < 30 * SCALE, "%.1fs rc=%d %s" % (dt, rc, err))

    # 7. JSON with a UTF-8 byte order mark is read; UTF-16 JSON is named as such.
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "testdata", "json", "train.json"), "rb") as f:
        js = f.read()
    plain = write("plain.json", js)
    bom = write("bom.json", b"\xef\xbb\xbf" + js)
    rc1, out1, err1, _ = run(["analyze", "--format", "json", plain])
    rc2, out2, err2, _ = run(["analyze", "--format", "json", bom])
    import json
    same = rc1 == 0 and rc2 == 0 and json.loads(out1)["devices"] == json.loads(out2)["devices"]
    check("UTF-8 BOM JSON reads as without it", same, err2)
    u16 = write("utf16.json", b"\xff\xfe" + js.decode().encode("utf-16-le"))
    rc, out, err, _ = run(["analyze", u16])
    check("UTF-16 JSON is named", one_line_error(rc, err, "offset 0", "UTF-16"), err)

print("%d passed, %d failed" % (passed, failures))
sys.exit(1 if failures else 0)
