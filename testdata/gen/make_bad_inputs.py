#!/usr/bin/env python3
# Writes testdata/bad/: malformed inputs, each with the exact error line memsnap must print (EXPECTED.tsv).
"""Run from anywhere: python3 testdata/gen/make_bad_inputs.py

EXPECTED.tsv rows: file<TAB>expected stderr line, where {path} stands for the path given on the
command line. Every one must exit with status 2 and print exactly that one line.
"""
import gzip
import os
import pickle

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bad")


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def seg(blocks, **extra):
    s = {"device": 0, "address": 0x7F0000000000, "total_size": sum(b.get("size", 0) if isinstance(b.get("size"), int)
                                                                     else 0 for b in blocks),
         "stream": 0, "segment_type": "large", "blocks": blocks}
    s.update(extra)
    return s


def blk(size=2097152, state="active_allocated", **extra):
    b = {"size": size, "state": state, "requested_size": size, "frames": []}
    b.update(extra)
    return b


def main():
    os.makedirs(OUT, exist_ok=True)
    good = pickle.dumps({"segments": [seg([blk()])], "device_traces": [[]]}, protocol=4)
    cases = []

    def write(name, data, expected):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        cases.append((name, expected))

    write("empty.pickle", b"", "{path}: offset 0: unexpected end of data: no STOP opcode (the pickle is truncated)")
    cut = good[:len(good) // 2]
    write("truncated.pickle", cut, None)  # expected computed below from the cut point
    write("not_a_pickle.txt", b"hello world\n",
          "{path}: offset 0: not a snapshot: the input is neither a pickle nor JSON (it starts with 'hello world')")
    write("plain_int.pickle", pickle.dumps(42, protocol=4),
          "{path}: not a memory snapshot: the top-level object is of type int, not a dict or a list of segments")
    write("no_segments.pickle", pickle.dumps({"foo": 1, "bar": []}, protocol=4),
          "{path}: not a memory snapshot: the top-level dict has no 'segments' key (its keys: foo, bar)")
    write("size_str.pickle", pickle.dumps({"segments": [seg([blk(), blk(size="big")])]}, protocol=4),
          "{path}: segments[0].blocks[1].size: expected int, got str")
    write("negative_size.pickle", pickle.dumps({"segments": [seg([blk(size=-5)], total_size=512)]}, protocol=4),
          "{path}: segments[0].blocks[0].size: expected a non-negative int, got -5")
    # PyTorch writes a fraction in (0, 1), or 0: NaN or an infinity is no setting, and JSON
    # output could not carry it (found by the fuzz target: export wrote null, then refused it).
    write("gc_threshold_nan.pickle",
          pickle.dumps({"segments": [seg([blk()])], "device_traces": [[]],
                        "allocator_settings": {"garbage_collection_threshold": float("nan")}}, protocol=4),
          "{path}: allocator_settings.garbage_collection_threshold: expected a finite number, got nan")
    write("bad_state.pickle", pickle.dumps({"segments": [seg([blk(state="weird")])]}, protocol=4),
          "{path}: segments[0].blocks[0].state: unknown block state 'weird'")
    missing = seg([blk()])
    del missing["blocks"]
    write("missing_blocks.pickle", pickle.dumps({"segments": [missing]}, protocol=4),
          "{path}: segments[0]: missing key 'blocks'")
    trace = [{"action": "alloc", "addr": 1, "size": 2, "stream": 0}] * 3 + [{"action": 7}]
    write("action_int.pickle", pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4),
          "{path}: device_traces[0][3].action: expected str, got int")
    write("frame_line_str.pickle",
          pickle.dumps({"segments": [seg([blk(frames=[{"filename": "a.py", "line": "x", "name": "f"}])])]},
                       protocol=4),
          "{path}: segments[0].blocks[0].frames[0].line: expected int, got str")
    # A pickle that would run os.system if loaded with pickle.load: memsnap refuses it.
    # pickle.dumps only writes the bytes; nothing is executed here.
    evil = pickle.dumps({"segments": [], "x": Evil()}, protocol=4)
    write("evil_reduce.pickle", evil,
          "{path}: offset %d: refused opcode STACK_GLOBAL posix.system: memsnap never imports or calls code from a pickle "
          "(a genuine snapshot holds only plain data)" % evil.index(b"\x93"))
    write("evil_global.pickle", b"cos\nsystem\n(S'true'\ntR.",
          "{path}: offset 0: refused opcode GLOBAL os.system: memsnap never imports or calls code from a pickle "
          "(a genuine snapshot holds only plain data)")
    write("deep_marks.pickle", b"\x80\x04" + b"(" * 5000 + b".",
          "{path}: offset 4098: MARK nesting deeper than 4096")
    gz = gzip.compress(good, mtime=0)
    write("truncated.pickle.gz", gz[: len(gz) - 12], None)
    write("invalid.json", b'{"segments": [1, 2,, 3]}', "{path}: offset 19: invalid JSON: syntax error while parsing "
                                                        "value - unexpected ','; expected '[', '{', or a literal")
    write("proto9.pickle", b"\x80\x09N.", "{path}: offset 0: unsupported pickle protocol 9")
    with open(os.path.join(OUT, "EXPECTED.tsv"), "w") as f:
        for name, expected in cases:
            if expected is None:
                continue
            f.write("%s\t%s\n" % (name, expected))


if __name__ == "__main__":
    main()
