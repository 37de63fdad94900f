// The schema-directed fast path builds exactly the model the generic path builds (ids,
// tables and order included) on every fixture and real file, and gives way to the
// generic path on every form it does not handle.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/snapshot/fast_build.hpp"
#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/pickler.hpp"
#include "memsnap/pickle/scanner.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/snapshot/builder.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/error.hpp"
#include "support/model_compare.hpp"
#include "support/streamed.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::snapshot;

namespace {

using test::check_same_model;
using test::check_streamed;

// Returns whether the fast path took the file. With `split`, the parse runs in two halves
// where it can; `halves` counts the parses that did.
bool compare_paths(const std::vector<uint8_t>& raw, const detail::SplitOptions& split = detail::SplitOptions::none(),
                   size_t* halves = nullptr) {
  io::ByteSource src = io::ByteSource::from_bytes(raw);
  if (src.encoding() != io::Encoding::Pickle) return false;
  auto fast = detail::fast_build(src.data(), nullptr, nullptr, split);
  if (fast && halves) *halves += fast->split;
  if (fast && fast->split) {  // the join counted the second half's memo entries as one pass does
    auto whole = detail::fast_build(src.data());
    REQUIRE(whole);
    CHECK(fast->memo_count == whole->memo_count);
  }
  Snapshot generic;
  pickle::PickleInfo info;
  try {
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info);
    BuildOptions bo;
    bo.input_bytes = src.data().size();
    generic = build_snapshot(g, bo);
  } catch (const InputError&) {
    CHECK_MESSAGE(!fast, "the fast path accepted an input the generic path refuses");
    return false;
  }
  if (!fast) return false;
  CHECK(fast->protocol == info.protocol);
  check_same_model(fast->snapshot, generic);
  return true;
}

// 300 copies of `base`, each with `flips` bytes past the PROTO header set from a xorshift
// sequence that starts at `seed`, handed to each(copy, round).
template <class F>
void each_mutation(const std::vector<uint8_t>& base, uint64_t seed, int flips, F each) {
  uint64_t x = seed;
  for (int round = 0; round < 300; ++round) {
    auto m = base;
    for (int k = 0; k < flips; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at = 2 + size_t(x % (m.size() - 2));
      m[at] = uint8_t(x >> 40);
    }
    CAPTURE(round);
    each(m, round);
  }
}

}  // namespace

TEST_CASE("fast path: the same model as the generic path on every snapgen fixture") {
  size_t fast = 0;
  size_t files = test::each_snapgen_pickle(
      [&](const std::filesystem::path& p) {
        std::string name = p.filename().string();
        bool took = compare_paths(test::read_bytes(p));
        fast += took;
        // Everything but protocol 0 (text opcodes) and the 1.13/2.0 history form takes the fast path.
        if (name.find("proto0") == std::string::npos && name.find("legacy") == std::string::npos) CHECK(took);
      },
      true);
  CHECK(files >= 20);
  CHECK(fast >= files - 2);
}

// The split parse starts its second half at a trace event found by walking the opcodes from a
// FRAME; the first half takes its work only where everything matches. Forced on small files
// (a try every 256 bytes), from several places: wherever it starts, the model is the
// generic path's, and it does start in files with event lists long enough.
TEST_CASE("fast path: a parse in two halves gives the same model as the generic path") {
  size_t files = 0, halves = 0, fast = 0;
  for (double at : {0.3, 0.5, 0.7}) {
    CAPTURE(at);
    detail::SplitOptions split{0, 256, at, true};
    files += test::each_snapgen_pickle(
        [&](const std::filesystem::path& p) {
          CAPTURE(p.filename().string());
          fast += compare_paths(test::read_bytes(p), split, &halves);
        },
        true);
  }
  MESSAGE(halves << " of " << fast << " fast parses ran in two halves");
  CHECK(fast >= files * 3 / 4);
  // The fixture made for it splits from every place: its two event lists are long enough,
  // and its second half meets nothing it must give up on (see the next test for the reverse).
  // From 0.2 its second half starts at the second device's event list (taken whole), from
  // the others inside one (appended to the first half's part of it).
  size_t fixture = 0;
  for (double at : {0.2, 0.3, 0.5, 0.7})
    compare_paths(test::read_bytes(test::testdata("snapgen/split.pickle")), detail::SplitOptions{0, 256, at, true},
                  &fixture);
  CHECK(fixture == 4);
  CHECK(halves >= 3);
}

TEST_CASE("fast path: a parse of a real file in two halves gives the same model as the generic path" *
          doctest::test_suite("realdata")) {
  size_t files = 0, halves = 0, fast = 0;
  for (double at : {0.3, 0.5, 0.7}) {
    CAPTURE(at);
    detail::SplitOptions split{0, 256, at, true};
    files += test::each_realdata(
        [&](const std::filesystem::path& p) { fast += compare_paths(test::read_bytes(p), split, &halves); });
  }
  MESSAGE(halves << " of " << fast << " fast parses ran in two halves");
  if (files) CHECK(fast >= files * 3 / 4);  // legacy history files take the generic path
}

TEST_CASE("fast path: a parse in two halves of mutated fixtures gives the generic path's model or gives way") {
  size_t halves = 0;
  each_mutation(test::read_bytes(test::testdata("snapgen/split.pickle")), 0x2545F4914F6CDD1Dull, 2,
                [&](const std::vector<uint8_t>& m, int round) {
                  compare_paths(m, detail::SplitOptions{0, 256, 0.3 + 0.4 * double(round % 5) / 4, true}, &halves);
                });
  MESSAGE(halves << " of 300 mutated inputs parsed in two halves");
  CHECK(halves >= 30);
}

TEST_CASE("fast path: the same model as the generic path on every real file" * doctest::test_suite("realdata")) {
  size_t fast = 0;
  size_t files =
      test::each_realdata([&](const std::filesystem::path& p) { fast += compare_paths(test::read_bytes(p)); });
  if (files) CHECK(fast * 10 >= files * 8);  // legacy history files take the generic path
}

TEST_CASE("fast path: the end of a run of memo GETs, against an op-by-op scan") {
  // The reference: one op at a time, stopping at the first byte that does not begin a
  // whole GET before the end.
  auto reference = [](const uint8_t* q, const uint8_t* end) {
    for (;;) {
      if (end - q >= 2 && *q == 'h')
        q += 2;
      else if (end - q >= 5 && *q == 'j')
        q += 5;
      else
        return q;
    }
  };
  uint64_t x = 0x13198A2E03707344ull;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  size_t checked = 0;
  for (int round = 0; round < 20000; ++round) {
    // Runs of 'h' only, 'j' only, alternating, random; argument bytes that are themselves
    // 'h' or 'j' half the time (an argument must never be read as an opcode); then a stop
    // byte, or the end of the input, at every offset.
    std::vector<uint8_t> buf;
    int mix = int(next() % 4);
    bool tricky_args = next() % 2;
    size_t ops = next() % 40;
    for (size_t i = 0; i < ops; ++i) {
      bool h = mix == 0 ? true : mix == 1 ? false : mix == 2 ? (i % 2 == 0) : (next() % 2 == 0);
      buf.push_back(h ? 'h' : 'j');
      for (int k = 0; k < (h ? 1 : 4); ++k) buf.push_back(tricky_args ? uint8_t("hj"[next() % 2]) : uint8_t(next()));
    }
    size_t tail = next() % 50;  // more bytes after the run, or none
    for (size_t i = 0; i < tail; ++i) buf.push_back(uint8_t("hje("[next() % 4]));
    size_t cut = buf.size() - size_t(next() % (buf.size() + 1) % 8);  // the input may end early
    const uint8_t* b = buf.data();
    CAPTURE(round);
    REQUIRE(pickle::Scanner::skip_memo_gets(b, b + cut) == reference(b, b + cut));
    ++checked;
  }
  CHECK(checked == 20000);
}

// A traceback is a run of memo GETs: BINGET ('h' and one byte) for frame dicts memoized
// below 256, LONG_BINGET ('j' and four) above. The fast path finds the run's end 32 bytes
// at a time from bit masks, with a scalar scan for the last bytes; a wrong end would give
// another stack or another event. Runs of one kind, alternating and random mixes, of every
// length up to 80, repeated (the span cache) and not, near the end of the input and cut
// by a streaming decoder's chunks: the model must be the generic path's.
TEST_CASE("fast path: tracebacks of BINGET and LONG_BINGET of every mix and length") {
  uint64_t x = 0x243F6A8885A308D3ull;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  for (int round = 0; round < 24; ++round) {
    CAPTURE(round);
    std::ostringstream os;
    pickle::Pickler p(os);
    auto event_head = [&](uint64_t addr) {
      p.begin_dict();
      p.str("action");
      p.str("alloc");
      p.str("addr");
      p.uinteger(addr);
      p.str("size");
      p.integer(512);
      p.str("stream");
      p.integer(0);
      p.str("frames");
    };
    p.begin_dict();
    p.str("segments");
    p.begin_list();
    p.end_list();
    p.str("device_traces");
    p.begin_list();
    p.begin_list();
    event_head(1 << 20);  // the first event writes 600 frame dicts, memo 0 to 599
    p.begin_list();
    std::vector<uint32_t> memo;
    for (int i = 0; i < 600; ++i) {
      p.begin_dict();
      p.str("filename");
      p.str("model.py");
      p.str("name");
      std::string name = "f";  // appended, not "f" + ...: GCC 12's false -Wstringop-overflow
      name += std::to_string(i);
      p.str(name);
      p.str("line");
      p.integer(i);
      p.end_dict();
      memo.push_back(p.memoize());
    }
    p.end_list();
    p.end_dict();
    REQUIRE(memo.back() == 599);
    std::vector<std::vector<uint32_t>> pool;
    for (int e = 0; e < 300; ++e) {
      std::vector<uint32_t> frames;
      if (!pool.empty() && next() % 3 == 0) {
        frames = pool[next() % pool.size()];  // the same bytes again: the span cache
      } else {
        size_t n = next() % 81;
        int mix = int(next() % 4);
        for (size_t i = 0; i < n; ++i) {
          bool low = mix == 0 ? true : mix == 1 ? false : mix == 2 ? (i % 2 == 0) : (next() % 2 == 0);
          frames.push_back(memo[low ? next() % 256 : 256 + next() % 344]);
        }
        pool.push_back(frames);
      }
      event_head((uint64_t(e) + 2) << 20);
      p.begin_list();
      for (uint32_t f : frames) p.get(f);
      p.end_list();
      p.end_dict();
    }
    p.end_list();
    p.end_list();
    p.end_dict();
    p.finish();
    std::string bytes = os.str();
    std::vector<uint8_t> raw(bytes.begin(), bytes.end());
    CHECK(compare_paths(raw));
    check_streamed(raw, 61, true);
  }
}

// A remembered traceback's bytes decode to its stack only while the memo entries they name
// are unchanged: a BINPUT that replaces a frame dict makes the same bytes another stack.
// The events before it repeat one traceback (remembered, then guessed from the one before);
// the events after it repeat the same bytes, which must now give the new frame.
TEST_CASE("fast path: a frame dict replaced in the memo changes what the same bytes mean") {
  std::vector<uint8_t> b;
  auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
  auto str = [&](std::string_view t) {
    op({0x8c, uint8_t(t.size())});
    b.insert(b.end(), t.begin(), t.end());
  };
  auto frame = [&](const char* name, uint8_t line, uint8_t memo) {
    op({'}', '('});
    str("filename");
    str("model.py");
    str("name");
    str(name);
    str("line");
    op({'K', line, 'u', 'q', memo});  // BINPUT: memo[memo] = this frame dict
  };
  int next_addr = 1;
  auto event = [&](auto&& frames) {
    op({'}', '('});
    str("action");
    str("alloc");
    str("addr");
    op({'J', 0, 0, uint8_t(next_addr++), 0});  // 64 KiB apart
    str("size");
    op({'M', 0, 2});
    str("stream");
    op({'K', 0});
    str("frames");
    op({']', '('});
    frames();
    op({'e', 'u'});
  };
  auto gets = [&] { op({'h', 0, 'h', 1}); };
  op({0x80, 4, '}', '('});
  str("segments");
  op({']'});
  str("device_traces");
  op({']', '(', ']', '('});
  event([&] {
    frame("first", 1, 0);
    frame("second", 2, 1);
  });
  for (int i = 0; i < 6; ++i) event(gets);
  event([&] { frame("replacement", 3, 0); });  // memo 0 is another frame dict now
  for (int i = 0; i < 6; ++i) event(gets);
  op({'e', 'e', 'u', '.'});
  CHECK(compare_paths(b));
  auto fast = detail::fast_build(b);
  REQUIRE(fast);
  const Snapshot& m = fast->snapshot;
  REQUIRE(m.devices.size() == 1);
  const auto& trace = m.devices[0].trace;
  REQUIRE(trace.size() == 14);
  auto first_frame_name = [&](size_t i) { return std::string(m.strings[m.frames[m.stacks[trace[i].stack][0]].name]); };
  for (size_t i = 1; i <= 6; ++i) CHECK(first_frame_name(i) == "first");
  for (size_t i = 8; i <= 13; ++i) CHECK(first_frame_name(i) == "replacement");
}

TEST_CASE("fast path: mutated fixtures give the generic path's model or give way") {
  // Byte mutations of a real-shaped file: whatever the fast path accepts must match.
  each_mutation(test::read_bytes(test::testdata("snapgen/leak.pickle")), 0x9E3779B97F4A7C15ull, 3,
                [&](const std::vector<uint8_t>& m, int) { compare_paths(m); });
}

// try_event remembers the bytes of each key's GET by its place in the event (key_op_), and
// the events after one in a MARK batch are decoded straight from their EMPTY_DICT. Keys
// that move, a GET that names another key once the memo entry is replaced (BINPUT), and an
// event the decoder leaves to the general path in the middle of a batch must all give the
// generic path's model, every event in its place.
TEST_CASE("fast path: events whose keys move, replaced memo keys, one event decoded the general way") {
  for (bool put : {false, true}) {
    CAPTURE(put);
    std::vector<uint8_t> b;
    auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
    auto str = [&](std::string_view t) {
      op({0x8c, uint8_t(t.size())});
      b.insert(b.end(), t.begin(), t.end());
    };
    uint8_t next = 0;
    auto memo = [&] {  // memoizes the top of the stack; returns its index
      if (put)
        op({'q', next});
      else
        op({0x94});
      return next++;
    };
    auto key = [&](std::string_view t) {
      str(t);
      return memo();
    };
    auto get = [&](uint8_t i) { op({'h', i}); };
    auto addr = [&](uint8_t a) { op({'J', 0, 0, a, 0}); };  // 64 KiB apart
    op({0x80, uint8_t(put ? 2 : 4), '}', '('});
    str("segments");
    op({']'});
    str("device_traces");
    op({']', '(', ']', '('});
    // 1: every key and value inline, memoized.
    op({'}', '('});
    uint8_t action = key("action"), alloc = key("alloc"), a = key("addr");
    addr(1);
    uint8_t size = key("size");
    op({'M', 0, 2});
    uint8_t stream = key("stream");
    op({'K', 0, 'u'});
    // 2, 3: the same keys by GET, in the same order.
    for (uint8_t i = 2; i <= 3; ++i) {
      op({'}', '('});
      get(action), get(alloc), get(a), addr(i), get(size), op({'M', 0, 2}), get(stream), op({'K', 0, 'u'});
    }
    // 4, 5: another order: every place now holds another key.
    for (uint8_t i = 4; i <= 5; ++i) {
      op({'}', '('});
      get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(i), get(action), get(alloc), op({'u'});
    }
    // 6: a frames list of a new frame dict, which the event decoder leaves to the general path.
    op({'}', '('});
    get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(6), get(action), get(alloc);
    str("frames");
    op({']', '(', '}', '('});
    str("filename"), str("model.py"), str("name"), str("forward"), str("line"), op({'K', 7, 'u', 'e', 'u'});
    // 7: after it, in the same batch, the decoder again.
    op({'}', '('});
    get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(7), get(action), get(alloc), op({'u'});
    // 8, 9: the memo entry of "size" now holds "stream" and that of "stream" "size" (BINPUT
    // can replace an entry; MEMOIZE only adds one, so these are new entries without put).
    // Event 9's first GET has the bytes event 7's first key had, and names the other key.
    op({'}', '('});
    uint8_t size2 = put ? size : next, stream2 = put ? stream : uint8_t(next + 1);
    auto memo_as = [&](uint8_t i) { put ? op({'q', i}) : (void)memo(); };
    str("stream");
    memo_as(size2);
    op({'K', 2});
    str("size");
    memo_as(stream2);
    op({'M', 0, 8});
    get(action), get(alloc), get(a), addr(8), op({'u'});
    op({'}', '('});
    get(stream2), op({'M', 0, 8}), get(size2), op({'K', 2}), get(action), get(alloc), get(a), addr(9), op({'u'});
    op({'e', 'e'});
    str("padding");  // the decoder wants 16 bytes ahead of each key: the last event has them
    str(std::string(64, '.'));
    op({'u', '.'});
    CHECK(compare_paths(b));
    auto fast = detail::fast_build(b);
    REQUIRE(fast);
    REQUIRE(fast->snapshot.devices.size() == 1);
    const Trace& t = fast->snapshot.devices[0].trace;
    REQUIRE(t.size() == 9);
    for (size_t i = 0; i < 9; ++i) {
      CAPTURE(i);
      CHECK(t[i].action == Action::Alloc);
      CHECK(t[i].addr == (uint64_t(i + 1) << 16));
      CHECK(t[i].size == (i < 3 ? 512u : i < 7 ? 1024u : 2048u));
      CHECK(t[i].stream == (i < 3 ? 0u : i < 7 ? 1u : 2u));
    }
    CHECK(t[5].stack.v != 0);
    CHECK(t[6].stack.v == 0);
  }
}

// The event decoder reads addr, size, stream and time_us in BININT1, BININT2, BININT and
// LONG1 of up to 8 bytes itself (int_op). Every form and LONG1 length, with values that fill
// the length, negative where the field allows it (addr, stream and time_us are any int64;
// a size must not be negative): the model must be the generic path's. A negative size in
// LONG1 of each length: both paths must refuse the file.
TEST_CASE("fast path: event integers in every opcode and LONG1 length") {
  auto build = [](auto&& value) {  // value(key, event, out) appends that field's opcode
    std::vector<uint8_t> b;
    auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
    auto str = [&](std::string_view t) {
      op({0x8c, uint8_t(t.size())});
      b.insert(b.end(), t.begin(), t.end());
      op({0x94});
    };
    op({0x80, 4, '}', 0x94, '('});
    str("segments");
    op({']', 0x94});
    str("device_traces");
    op({']', 0x94, '(', ']', 0x94, '('});
    for (int i = 0; i < 40; ++i) {
      op({'}', 0x94, '('});
      str("action");
      str("alloc");
      for (const char* k : {"addr", "size", "stream", "time_us"}) {
        str(k);
        value(std::string_view(k), i, b);
      }
      op({'u'});
    }
    op({'e', 'e'});
    str("padding");  // the decoder wants 16 bytes ahead of each key: the last event has them
    str(std::string(64, '.'));
    op({'u', '.'});
    return b;
  };
  // LONG1 of n bytes, little-endian two's complement (from 9 bytes on, sign bytes).
  auto long1 = [](std::vector<uint8_t>& b, int64_t x, int n) {
    b.push_back(0x8a);
    b.push_back(uint8_t(n));
    for (int k = 0; k < n; ++k) b.push_back(k < 8 ? uint8_t(uint64_t(x) >> (8 * k)) : (x < 0 ? 0xFF : 0x00));
  };
  // The shortest form pickle writes.
  auto shortest = [&](std::vector<uint8_t>& b, int64_t x) {
    if (x >= 0 && x < 256)
      b.insert(b.end(), {'K', uint8_t(x)});
    else if (x >= 0 && x < 65536)
      b.insert(b.end(), {'M', uint8_t(x), uint8_t(x >> 8)});
    else if (x >= INT32_MIN && x <= INT32_MAX)
      b.insert(b.end(), {'J', uint8_t(x), uint8_t(x >> 8), uint8_t(x >> 16), uint8_t(x >> 24)});
    else
      long1(b, x, 8);
  };
  // A value that needs all n bytes of LONG1 (its top byte's high bit clear, next-to-top set).
  auto filling = [](int n, int i, bool negative) {
    int64_t x = n >= 8 ? (int64_t{0x40} << 56) + i : (int64_t{0x40} << (8 * n - 8)) + i;
    return negative ? -x : x;
  };
  for (int n = 1; n <= 9; ++n)
    for (bool negative : {false, true}) {
      CAPTURE(n);
      CAPTURE(negative);
      auto b = build([&](std::string_view k, int i, std::vector<uint8_t>& out) {
        bool neg = negative && k != "size" && i % 2 == 1;
        int64_t x = filling(n, i, neg);
        if (i % 3 == 2)
          shortest(out, x);
        else
          long1(out, x, n == 9 ? 9 : n);
      });
      CHECK(compare_paths(b));
    }
  for (int n = 1; n <= 8; ++n) {
    CAPTURE(n);
    auto b = build([&](std::string_view k, int i, std::vector<uint8_t>& out) {
      long1(out, filling(n, i, k == "size" && i == 17), n);
    });
    CHECK_FALSE(compare_paths(b));
    CHECK_FALSE(detail::fast_build(b).has_value());
  }
}
