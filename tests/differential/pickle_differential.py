#!/usr/bin/env python3
"""Differential test: memsnap's unpickler against Python's own pickle, on random and mutated pickles.

Usage: pickle_differential.py PICKLE_DUMP [--cases N] [--seed S]

Cases are made at test time with a fixed seed (nothing is committed): Python's pickle.dumps of
random plain data with shared and later-extended lists at protocols 0-5, byte mutations of those,
and random opcode programs (lists, tuples, dicts, memo PUT/GET, MARK, POP, DUP, APPENDS in
batches). Each is decoded by PICKLE_DUMP (memsnap) and by pickle.loads restricted to plain data
(find_class refuses everything). They must agree:
- both decode: the canonical renderings are equal (what memsnap reports is what the pickle means);
- memsnap decodes and Python refuses: only where memsnap is knowingly laxer (invalid UTF-8 in a
  string, an unhashable dict key, SETITEM on a list);
- memsnap refuses and Python decodes: allowed (memsnap reads plain data only), counted.
"""
import io
import os
import pickle
import random
import resource
import subprocess
import sys
import tempfile


def esc(data):
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b not in (0x22, 0x5C) else "\\x%02x" % b for b in data)


class Skip(Exception):
    pass


class Budget:
    left = 0


def canon(v, depth=0):
    Budget.left -= 1
    if Budget.left < 0 or depth > 100:
        raise Skip  # a shared DAG that renders exponentially large: not compared
    if v is None:
        return "None"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, int):
        return str(v) if -2**63 <= v < 2**64 else hex(v)
    if isinstance(v, float):
        return "%.17g" % v
    if isinstance(v, str):
        return '"' + esc(v.encode("utf-8", "surrogatepass")) + '"'
    if isinstance(v, (bytes, bytearray)):
        return 'b"' + esc(v) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(canon(x, depth + 1) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(canon(x, depth + 1) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(canon(k, depth + 1) + ": " + canon(x, depth + 1) for k, x in v.items()) + "}"
    if isinstance(v, (set, frozenset)):
        if len({type(x) for x in v} & {bool, int, float}) > 1:
            raise Skip  # 1 == 1.0 == True: memsnap's rendering keeps each
        name = "frozenset" if isinstance(v, frozenset) else "set"
        return name + "{" + ", ".join(sorted(set(canon(x, depth + 1) for x in v))) + "}"
    raise Skip


class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s" % (module, name))


def python_decode(data):
    try:
        v = Restricted(io.BytesIO(data)).load()
    except (RecursionError, MemoryError):
        raise Skip  # a huge memo index: CPython's memo is a dense array (see main's RLIMIT_AS)
    except Exception as e:  # noqa: BLE001 - any refusal counts as an error
        return "ERR", type(e).__name__ + ": " + str(e)
    Budget.left = 20000
    return "OK", canon(v)


# ---- case generators -----------------------------------------------------------------------

def rand_str(r):
    alphabet = ["a", "b", "size", "frames", "EVIL.py", "good.py", "é", "✓", "\x00", "\n", "😀"]
    return "".join(r.choice(alphabet) for _ in range(r.randrange(0, 4)))


def rand_value(r, depth, pool):
    c = r.randrange(12 if depth < 4 else 6)
    if c == 0:
        return r.choice([None, True, False])
    if c == 1:
        return r.choice([0, 1, 255, 256, -1, 2**31, 2**47 + r.randrange(1000), -2**63, 2**64 - 1, 2**70])
    if c == 2:
        return r.choice([0.5, -0.0, 1e300])
    if c in (3, 4):
        return rand_str(r)
    if c == 5:
        return r.randrange(-5, 5)
    if c in (6, 7):  # a list, possibly shared
        if pool and r.random() < 0.4:
            return r.choice(pool)
        v = [rand_value(r, depth + 1, pool) for _ in range(r.randrange(0, 5))]
        pool.append(v)
        return v
    if c == 8:
        return tuple(rand_value(r, depth + 1, pool) for _ in range(r.randrange(0, 5)))
    if c == 9:
        return {rand_str(r): rand_value(r, depth + 1, pool) for _ in range(r.randrange(0, 4))}
    if c == 10:
        return r.choice([b"", b"\x00\xff", bytearray(b"ab")])
    return {r.randrange(3): rand_value(r, depth + 1, pool)}


def dumped_case(r):
    pool = []
    v = [rand_value(r, 0, pool) for _ in range(r.randrange(1, 6))]
    for lst in pool[: r.randrange(0, len(pool) + 1)]:  # lists that grow after being shared
        lst.extend(rand_value(r, 3, []) for _ in range(r.randrange(0, 3)))
    if r.random() < 0.3:
        v.append([list(x) if isinstance(x, list) else x for x in v])  # equal but distinct lists
    proto = r.randrange(0, 6)
    if proto < 3:
        v = [x for x in v]  # bytes become str at protocols < 3: still plain data
    try:
        return pickle.dumps(v, protocol=proto)
    except Exception:  # noqa: BLE001
        return pickle.dumps(None, protocol=proto)


def mutate(r, data):
    b = bytearray(data)
    for _ in range(r.randrange(1, 4)):
        if not b:
            break
        k = r.randrange(5)
        i = r.randrange(len(b))
        if k == 0:
            b[i] = r.randrange(256)
        elif k == 1:
            del b[i: i + r.randrange(1, 4)]
        elif k == 2:
            j = r.randrange(len(b))
            b[i:i] = b[j: j + r.randrange(1, 12)]
        elif k == 3:
            b[i] ^= 1 << r.randrange(8)
        else:
            b[i:i] = bytes([r.choice(b"()]}ae0124hqjr\x94\x85\x86\x87u.")])
    return bytes(b)


def program_case(r):
    """A random opcode program over a tiny grammar: most of it valid, some of it not."""
    out = bytearray(b"\x80\x04" if r.random() < 0.7 else b"")
    memo = 0
    depth = 0
    for _ in range(r.randrange(3, 60)):
        k = r.randrange(16)
        if k == 0:
            out += b"]"
        elif k == 1:
            out += b"("
            depth += 1
        elif k == 2 and depth:
            out += b"e"
            depth -= 1
        elif k == 3:
            out += b"\x94"
            memo += 1
        elif k == 4 and memo:
            out += b"h" + bytes([r.randrange(memo)])
        elif k == 5:
            out += b"K" + bytes([r.randrange(256)])
        elif k == 6:
            s = r.choice([b"good.py", b"EVIL.py", b"x"])
            out += b"\x8c" + bytes([len(s)]) + s
        elif k == 7:
            out += b"a"
        elif k == 8:
            out += b"0"
        elif k == 9:
            out += b"2"
        elif k == 10:
            out += b"q" + bytes([r.randrange(max(1, memo + 2))])
        elif k == 11:
            out += b"}"
        elif k == 12 and depth:
            out += b"u"
            depth -= 1
        elif k == 13:
            out += r.choice([b"\x85", b"\x86", b"\x87", b")"])
        elif k == 14 and depth:
            out += b"t"
            depth -= 1
        else:
            out += b"N"
    out += b"e" * r.randrange(0, 2) + b"."
    return bytes(out)


def evil_case():
    """Issue 11's shape: a list shares a remembered item range that a later list frees and reuses.

    L1's first batch [A, B] is remembered, then L1 grows in place and is merged with L0, which
    gives its space back; [A] and [B, X] are written there, so L5 = [A, B] matches the stale entry
    and shares it; D = [B, X] then grows, merges with L0' and gives its space back too, and E's
    item EVIL.py lands where L5's second item was. Python sees L5 = ['good.py', 'b'].
    """
    def s(t):
        return b"\x8c" + bytes([len(t)]) + t + b"\x94"

    def lst(*gets):
        return b"]\x94(" + b"".join(b"h" + bytes([g]) for g in gets) + b"e"

    body = s(b"good.py") + s(b"b") + s(b"c") + s(b"x") + s(b"y")          # memo 1..5
    body += lst(1, 2, 3) + lst(2, 4, 5)                                   # L0 = 6, L0' = 7
    body += lst(1, 2) + b"(h\x03e"                                        # L1 = 8, then a second batch
    body += lst(1) + lst(2, 4) + lst(1, 2)                                 # C1 = 9, D = 10, L5 = 11
    body += b"h\x0a(h\x05e"                                               # D grows and merges with L0'
    body += b"]\x94(\x8c\x07EVIL.pye"                                      # E = 12
    return b"\x80\x04]\x94(" + body + b"e."


def unlimit():
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def main():
    dumper = sys.argv[1]
    cases = 600
    seed = 20261123
    args = sys.argv[2:]
    while args:
        if args[0] == "--cases":
            cases = int(args[1])
        elif args[0] == "--seed":
            seed = int(args[1])
        args = args[2:]
    # CPython's C unpickler grows its memo to a PUT's index: under this bound a hostile index
    # fails at once with MemoryError instead of zero-filling gigabytes.
    # Only the soft limit, and the dumper gets it lifted again: it is memsnap's code (bounded by
    # its own budget) and may be an AddressSanitizer build, which reserves terabytes of shadow.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
    r = random.Random(seed)
    datas = [evil_case()]
    while len(datas) < cases:
        k = r.randrange(10)
        if k < 3:
            datas.append(dumped_case(r))
        elif k < 7:
            datas.append(mutate(r, dumped_case(r)))
        else:
            datas.append(program_case(r))
    failures = []
    counts = {"agree_ok": 0, "agree_err": 0, "memsnap_stricter": 0, "memsnap_laxer": 0, "skipped": 0}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, d in enumerate(datas):
            p = os.path.join(tmp, "case%05d.pickle" % i)
            with open(p, "wb") as f:
                f.write(d)
            paths.append(p)
        lines = []
        for i in range(0, len(paths), 200):
            res = subprocess.run([dumper] + paths[i: i + 200], capture_output=True, timeout=120,
                                 preexec_fn=unlimit)
            if res.returncode != 0:
                print("FAIL: the dumper exited with %d: %s" % (res.returncode, res.stderr.decode(errors="replace")))
                return 1
            lines += res.stdout.decode("utf-8", "replace").split("\n")[:-1]
        if len(lines) != len(paths):
            print("FAIL: %d lines for %d cases" % (len(lines), len(paths)))
            return 1
        for i, (data, line) in enumerate(zip(datas, lines)):
            m_status, _, m_value = line.partition(" ")
            try:
                p_status, p_value = python_decode(data)
            except Skip:
                counts["skipped"] += 1
                continue
            if m_status == "OK" and p_status == "OK":
                if m_value == p_value:
                    counts["agree_ok"] += 1
                else:
                    failures.append((i, data, "memsnap: " + m_value[:300], "python:  " + p_value[:300]))
            elif m_status == "ERR" and p_status == "ERR":
                counts["agree_err"] += 1
            elif m_status == "ERR":
                counts["memsnap_stricter"] += 1
            else:
                lax = ("UnicodeDecodeError", "unhashable", "TypeError: 'list' object", "TypeError: list indices",
                       "IndexError: list assignment")
                if any(x in p_value for x in lax):
                    counts["memsnap_laxer"] += 1
                else:
                    failures.append((i, data, "memsnap: " + m_value[:300], "python:  " + p_value[:300]))
    print(" ".join("%s=%d" % kv for kv in counts.items()))
    for i, data, a, b in failures[:10]:
        print("FAIL case %d (%d bytes): %s" % (i, len(data), data.hex()))
        print("  " + a)
        print("  " + b)
    if failures:
        print("%d passed, %d failed" % (len(datas) - len(failures), len(failures)))
        return 1
    if counts["agree_ok"] < cases // 4:
        print("FAIL: only %d cases decoded on both sides; the generator has drifted" % counts["agree_ok"])
        return 1
    print("%d passed, 0 failed" % len(datas))
    return 0


if __name__ == "__main__":
    sys.exit(main())
