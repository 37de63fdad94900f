#!/usr/bin/env python3
# Writes the pickle-opcode fixtures in testdata/pickle/ (+ canonical .expected dumps, OPCODES.txt, refused/).
"""Fixtures for memsnap's unpickler.

values_pP.pickle (P = 0..5) hold one plain-data object written by CPython's pickle at protocol P;
handmade_*.pickle are hand-assembled for opcodes pickle.dump never emits; frames_p4.pickle has a
payload written outside any FRAME; refused/*.pickle each start with a valid prefix followed by one
opcode memsnap must refuse (its offset is in refused/OFFSETS.tsv). Every accepted file has a
NAME.expected: the canonical one-line dump (format in canon()) of pickle.loads(file).

Run: python3 testdata/gen/make_pickle_fixtures.py   (output is byte-identical on every run)
"""
import os
import pickle
import pickletools
import struct
import sys

if os.environ.get("PYTHONHASHSEED") != "0":  # set iteration order must not vary between runs
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pickle")
REFUSED = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
           "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER", "READONLY_BUFFER"}
PLAIN = {op.name for op in pickletools.opcodes} - REFUSED


def esc(data):
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b not in (0x22, 0x5C) else "\\x%02x" % b
                   for b in data)


def canon(v):
    """Canonical dump shared with the C++ side (see the brief in tests/ and this file's docstring)."""
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
        return "[" + ", ".join(map(canon, v)) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(map(canon, v)) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(canon(k) + ": " + canon(x) for k, x in v.items()) + "}"
    if isinstance(v, (set, frozenset)):
        name = "frozenset" if isinstance(v, frozenset) else "set"
        return name + "{" + ", ".join(sorted(map(canon, v))) + "}"
    raise TypeError(type(v))


def values(proto):
    """The test object; types pickle cannot write as plain data at this protocol are left out."""
    shared = [1, 2]
    shared_dict = {"size": 512, "state": "active_allocated"}
    ints = [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -2**31, 2**31, 2**47 + 12345,
            2**63 - 1, -2**63, 2**64 - 1, 2**64, -(2**64) - 5, 2**200 + 7, 2**2100 + 1]
    floats = [0.0, -0.0, -1.5, 1e100, 0.1, 3.141592653589793, 5e-324, float("inf"),
              float("-inf"), float("nan")]
    strs = ["", "size", "a" * 300, "héllo ✓ 😀", 'q"uote \\back\nnew\ttab', "\x00\r\x1a", "\ud800x"]
    obj = [None, True, False, ints, floats, strs, shared, [42], {"k": 1}, [], {}, (),
           (1,), (1, "two"), (1, 2.5, None), (1, 2, 3, 4),
           {0: None, -1: 1.5, (1, 2): "t", None: True, "size": 3},
           {"segments": [{"address": 2**47, "total_size": 2097152, "blocks": [
               {"size": 1536, "state": "active_allocated", "requested_size": 1500},
               {"size": 2095616, "state": "inactive", "requested_size": 0}]}]}]
    if proto >= 3:
        obj += [b"\x00\xffab", b"\x01" * 300]
    else:
        obj += ["bytes-as-str \x00\xffab"]
    if proto >= 4:
        obj += [{3, 1, 2}, frozenset({4, 5}), set(), frozenset(), {"b", "a"}]
    if proto >= 5:
        obj += [bytearray(b"xy\x00")]
    obj += [list(range(1500)), {"k%04d" % i: i for i in range(1200)}]
    obj += [shared_dict] * 300 + [shared, "size"]
    return obj


def u32(n):
    return struct.pack("<I", n)


def u64(n):
    return struct.pack("<Q", n)


def handmade():
    """Byte strings for opcodes CPython's pickler never emits (or emits only for Python 2 types)."""
    files = {}
    # DUP / POP / POP_MARK: [7, 7, "x"] built with stack shuffles, then (L, L) via DUP + TUPLE2.
    files["handmade_stackops"] = (
        b"\x80\x02" b"]" b"(" b"K\x07" b"2" b"N" b"0"          # EMPTY_LIST MARK 7 DUP None POP
        b"(" b"K\x01K\x02\x88" b"1"                             # MARK 1 2 True POP_MARK
        b"X\x01\x00\x00\x00x" b"e"                              # "x" APPENDS
        b"2" b"N" b"0" b"\x86" b".")                            # DUP None POP TUPLE2 STOP
    big = bytes((i * 37 + 11) & 0xFF for i in range(299)) + b"\x01"   # positive, 300 bytes
    files["handmade_long4"] = (
        b"\x80\x02("
        + b"\x8b" + u32(300) + big                              # LONG4, 300 bytes
        + b"\x8b" + u32(4) + b"\xfe\xff\xff\xff"                # LONG4 -2
        + b"\x8b" + u32(0)                                      # LONG4 with no bytes = 0
        + b"\x8a\x00"                                           # LONG1 with no bytes = 0
        + b"\x8a\x09" + b"\xff" * 8 + b"\x00"                   # LONG1 2**64-1 (9 bytes)
        + b"\x8a\x08" + b"\xff" * 8                             # LONG1 -1 (8 bytes)
        + b"\x8a\x06" + (2**47 + 12345).to_bytes(6, "little")   # LONG1 device address
        + b"l.")                                                # LIST STOP
    files["handmade_textints"] = (
        b"(" b"I01\n" b"I00\n" b"I-5\n" b"I99999999999\n" b"I0\n"   # INT: True False -5 big 0
        b"L12\n" b"L-12L\n" b"L18446744073709551616L\n"              # LONG with / without L
        b"F-2.5\n" b"F1e+100\n" b"l.")                               # FLOAT; MARK ... LIST
    u = "€uro 😀".encode("utf-8")
    files["handmade_strings"] = (
        b"\x80\x05("
        b"S'a\\n\\'b'\n"                                        # STRING 'a\n\'b'
        b"S\"tab\\there\\x41\\\\\"\n"                           # STRING "tab\there\x41\\"
        b"T" + u32(3) + b"bin"                                  # BINSTRING
        + b"U\x05short"                                         # SHORT_BINSTRING
        + b"Vcaf\xe9 \\u20ac \\U0001f600\n"                     # UNICODE (raw-unicode-escape)
        + b"X" + u32(len(u)) + u                                # BINUNICODE
        + b"\x8c\x00"                                           # SHORT_BINUNICODE ""
        + b"\x8d" + u64(len(u)) + u                             # BINUNICODE8
        + b"C\x02\x00\xff"                                      # SHORT_BINBYTES
        + b"B" + u32(3) + b"abc"                                # BINBYTES
        + b"\x8e" + u64(2) + b"\x80\x81"                        # BINBYTES8
        + b"\x96" + u64(3) + b"ba\x00"                          # BYTEARRAY8
        + b"l.")
    return files


def refused():
    """(name, bytes, offset of the refused opcode): a valid prefix, the opcode, its operand, STOP."""
    return [
        ("GLOBAL", b"\x80\x04cos\nsystem\n.", 2),
        ("STACK_GLOBAL", b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93.", 16),
        ("REDUCE", b"\x80\x04N)R.", 4),
        ("BUILD", b"\x80\x04]}b.", 4),
        ("INST", b"\x80\x02(ios\nsystem\n.", 3),
        ("OBJ", b"\x80\x02(N)o.", 5),
        ("NEWOBJ", b"\x80\x02N)\x81.", 4),
        ("NEWOBJ_EX", b"\x80\x04N)}\x92.", 5),
        ("EXT1", b"\x80\x02\x82\x01.", 2),
        ("EXT2", b"\x80\x02\x83\x01\x00.", 2),
        ("EXT4", b"\x80\x02\x84\x01\x00\x00\x00.", 2),
        ("PERSID", b"\x80\x02Pabc\n.", 2),
        ("BINPERSID", b"\x80\x02NQ.", 3),
        ("NEXT_BUFFER", b"\x80\x05\x97.", 2),
        ("READONLY_BUFFER", b"\x80\x05C\x02ab\x98.", 6),
    ]


def opnames(data):
    return [(op.name, pos) for op, _, pos in pickletools.genops(data)]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    os.makedirs(os.path.join(OUT, "refused"), exist_ok=True)
    accepted = {}
    for p in range(6):
        accepted["values_p%d" % p] = pickle.dumps(values(p), protocol=p)
    # > 64 KiB at protocol 4: the big str payload is written between two FRAMEs, outside both.
    accepted["frames_p4"] = pickle.dumps(["y" * 100, "x" * 70000, list(range(300)), "tail"], protocol=4)
    accepted.update(handmade())

    report = ["# Opcodes present per file (pickletools.genops), by name. Regenerate: "
              "python3 testdata/gen/make_pickle_fixtures.py"]
    covered = set()
    for name, data in accepted.items():
        ops = {n for n, _ in opnames(data)}
        bad = ops & REFUSED
        assert not bad, (name, bad)
        covered |= ops
        write(os.path.join(OUT, name + ".pickle"), data)
        with open(os.path.join(OUT, name + ".expected"), "w", newline="\n") as f:
            f.write(canon(pickle.loads(data)) + "\n")
        report.append("%s.pickle\t%s" % (name, " ".join(sorted(ops))))

    offsets = []
    for name, data, off in refused():
        ops = opnames(data)  # parses without executing anything
        first = next((n, pos) for n, pos in ops if n not in PLAIN)
        assert first == (name, off), (name, first)
        write(os.path.join(OUT, "refused", name + ".pickle"), data)
        offsets.append("%s.pickle\t%s\t%d" % (name, name, off))
        report.append("refused/%s.pickle\t%s" % (name, " ".join(sorted({n for n, _ in ops}))))
    with open(os.path.join(OUT, "refused", "OFFSETS.tsv"), "w", newline="\n") as f:
        f.write("\n".join(offsets) + "\n")

    missing = sorted(PLAIN - covered)
    report.append("# plain-data opcodes covered by accepted files (%d of %d): %s"
                  % (len(PLAIN & covered), len(PLAIN), " ".join(sorted(PLAIN & covered))))
    report.append("# plain-data opcodes not covered: %s" % (" ".join(missing) or "none"))
    with open(os.path.join(OUT, "OPCODES.txt"), "w", newline="\n") as f:
        f.write("\n".join(report) + "\n")
    print("wrote %d accepted + %d refused fixtures to %s; not covered: %s"
          % (len(accepted), len(offsets), os.path.normpath(OUT), missing or "none"))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
