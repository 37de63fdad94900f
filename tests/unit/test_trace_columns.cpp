// Trace columns: every field of every event reads back as pushed, whichever columns
// stay constant (no stacks, one stream, one 4 GiB region) and wherever a column turns
// varying (first event, middle, last), and through copies and stack renumbering.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/columns.hpp"

using memsnap::snapshot::Action;
using memsnap::snapshot::StackId;
using memsnap::snapshot::Trace;
using memsnap::snapshot::TraceEvent;

namespace {

bool same(const TraceEvent& a, const TraceEvent& b) {
  return a.addr == b.addr && a.size == b.size && a.stream == b.stream && a.time_us == b.time_us && a.stack == b.stack &&
         a.action == b.action;
}

// Events whose stack, stream and address region are constant up to `turn`, varying after.
std::vector<TraceEvent> events(size_t n, size_t turn) {
  std::vector<TraceEvent> v;
  for (size_t i = 0; i < n; ++i) {
    TraceEvent e;
    bool varying = i >= turn;
    uint64_t region = varying ? (i % 5) * 3 + 0x7f00 : 0x7f00;
    e.addr = region << 32 | ((i * 2654435761u) & 0xFFFFFE00u);
    e.size = i % 97 == 0 ? (uint64_t{5} << 32) + i : 512 * (i % 300 + 1);
    e.stream = varying ? i % 3 : 0;
    e.time_us = i % 50 == 0 ? TraceEvent::kNoTime : int64_t{1700000000000000} + int64_t(i) * 7;
    e.stack = StackId{varying ? static_cast<uint32_t>(i % 11) : 0u};
    e.action = static_cast<Action>(i % 4);
    v.push_back(e);
  }
  return v;
}

void check(size_t n, size_t turn) {
  auto v = events(n, turn);
  Trace t;
  for (const auto& e : v) t.push_back(e);
  REQUIRE(t.size() == n);
  for (size_t i = 0; i < n; ++i) {
    CHECK(same(t[i], v[i]));
    CHECK(t.addr_at(i) == v[i].addr);
    CHECK(t.size_at(i) == v[i].size);
    CHECK(t.stack_at(i) == v[i].stack);
    CHECK(t.action_at(i) == v[i].action);
  }
  Trace c = t;
  t.remap_stacks([](uint32_t s) { return s + 100; });
  for (size_t i = 0; i < n; ++i) {
    CHECK(same(c[i], v[i]));
    CHECK(t[i].stack.v == v[i].stack.v + 100);
  }
}

}  // namespace

TEST_CASE("trace columns read back every field") {
  for (size_t turn : {size_t{0}, size_t{1}, size_t{777}, size_t{4999}, size_t{5000}}) check(5000, turn);
  check(1, 1);
  check(300000, 150000);  // columns past the 2 MiB mapping threshold
}

TEST_CASE("a lazy column takes no space while constant") {
  memsnap::util::LazyColumn<uint32_t> c;
  for (int i = 0; i < 100000; ++i) c.push_back(7);
  CHECK_FALSE(c.dense());
  CHECK(c.memory_bytes() == 0);
  CHECK(c.size() == 100000);
  CHECK(c[99999] == 7);
  c.push_back(8);
  CHECK(c.dense());
  CHECK(c.size() == 100001);
  CHECK(c[0] == 7);
  CHECK(c[99999] == 7);
  CHECK(c[100000] == 8);
  c.transform([](uint32_t x) { return x * 2; });
  CHECK(c[5] == 14);
  CHECK(c[100000] == 16);
}

TEST_CASE("an empty trace has no events") {
  Trace t;
  CHECK(t.empty());
  CHECK(t.size() == 0);
}

TEST_CASE("addresses in more 4 GiB regions than the region table holds read back") {
  Trace t;
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 70000; ++i) {
    TraceEvent e;
    e.addr = (i << 32) | 0x200;
    e.action = Action::Alloc;
    want.push_back(e.addr);
    t.push_back(e);
  }
  Trace c = t;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += t.addr_at(i) != want[i] || c[i].addr != want[i];
  CHECK(bad == 0);
}

TEST_CASE("more distinct streams than the stream table holds read back") {
  Trace t;
  for (uint64_t i = 0; i < 70000; ++i) {
    TraceEvent e;
    e.addr = 0x7f0000000000ull + i * 512;
    e.stream = i % 3 == 0 ? 7 : 0x55550000 + i;  // a common stream among many
    e.action = Action::Alloc;
    t.push_back(e);
  }
  size_t bad = 0;
  for (uint64_t i = 0; i < 70000; ++i) bad += t[i].stream != (i % 3 == 0 ? 7 : 0x55550000 + i);
  CHECK(bad == 0);
}

TEST_CASE("a dictionary column turns to values past 65,535 distinct ones") {
  memsnap::util::DictColumn<uint64_t> c;
  for (uint64_t i = 0; i < 65535; ++i) c.push_back(i * 3);
  CHECK_FALSE(c.wide());
  c.push_back(1);  // the 65,536th distinct value
  CHECK(c.wide());
  c.push_back(6);
  REQUIRE(c.size() == 65537);
  size_t bad = 0;
  for (uint64_t i = 0; i < 65535; ++i) bad += c[i] != i * 3;
  CHECK(bad == 0);
  CHECK(c[65535] == 1);
  CHECK(c[65536] == 6);
  auto copy = c.clone();
  CHECK(copy[65536] == 6);
}

// The bulk appends a parse in two halves joins with must equal pushing the rows one by one:
// the same values, the same representation (constant or dense, indexed or wide), the same
// table order, for every mix of constant and varying halves.
namespace {

std::vector<uint32_t> column_values(size_t n, int kind, uint32_t base) {
  std::vector<uint32_t> v;
  for (size_t i = 0; i < n; ++i) switch (kind) {
      case 0: v.push_back(base); break;                                  // constant
      case 1: v.push_back(base + static_cast<uint32_t>(i % 5)); break;   // a few values
      case 2: v.push_back(base + static_cast<uint32_t>(i % 40)); break;  // past the linear table
      case 3: v.push_back(i + 1 < n ? base : base + 1); break;           // turns on the last row
      default: v.push_back(base + static_cast<uint32_t>(i)); break;      // all distinct
    }
  return v;
}

}  // namespace

TEST_CASE("a lazy column's append equals pushing its rows") {
  auto f = [](uint32_t x) { return x % 7 == 3 ? 3u : x + 1000; };  // may merge two values
  for (size_t n : {size_t{0}, size_t{1}, size_t{300}})
    for (size_t m : {size_t{0}, size_t{1}, size_t{300}})
      for (int dk = 0; dk < 5; ++dk)
        for (int sk = 0; sk < 5; ++sk)
          for (uint32_t sbase : {3u, 10u}) {
            CAPTURE(n);
            CAPTURE(m);
            CAPTURE(dk);
            CAPTURE(sk);
            CAPTURE(sbase);
            memsnap::util::LazyColumn<uint32_t> a, b, src;
            for (uint32_t x : column_values(n, dk, 1003)) a.push_back(x), b.push_back(x);
            for (uint32_t x : column_values(m, sk, sbase)) src.push_back(x);
            for (size_t j = 0; j < src.size(); ++j) a.push_back(f(src[j]));
            b.append(src, f);
            REQUIRE(b.size() == a.size());
            CHECK(b.dense() == a.dense());
            size_t bad = 0;
            for (size_t i = 0; i < a.size(); ++i) bad += a[i] != b[i];
            CHECK(bad == 0);
          }
}

TEST_CASE("a dictionary column's append equals pushing its rows") {
  auto check_append = [](const std::vector<uint64_t>& head, const std::vector<uint64_t>& tail) {
    memsnap::util::DictColumn<uint64_t> a, b, src;
    for (uint64_t x : head) a.push_back(x), b.push_back(x);
    for (uint64_t x : tail) src.push_back(x), a.push_back(x);
    b.append(src);
    REQUIRE(b.size() == a.size());
    CHECK(b.wide() == a.wide());
    size_t bad = 0;
    for (size_t i = 0; i < a.size(); ++i) bad += a[i] != b[i];
    CHECK(bad == 0);
    // The same table order: a further row of any value gets the same code either way, so
    // the two columns stay equal as they grow.
    for (uint64_t x : {uint64_t{5}, uint64_t{77}, uint64_t{123456}}) a.push_back(x), b.push_back(x);
    bad = 0;
    for (size_t i = 0; i < a.size(); ++i) bad += a[i] != b[i];
    CHECK(bad == 0);
  };
  for (int hk = 0; hk < 5; ++hk)
    for (int tk = 0; tk < 5; ++tk)
      for (uint32_t tbase : {5u, 20u, 900u}) {
        CAPTURE(hk);
        CAPTURE(tk);
        CAPTURE(tbase);
        std::vector<uint64_t> head, tail;
        for (uint32_t x : column_values(300, hk, 5)) head.push_back(x);
        for (uint32_t x : column_values(300, tk, tbase)) tail.push_back(x);
        check_append(head, tail);
        check_append({}, tail);
        check_append(head, {});
      }
  // Past 65,535 distinct values: the head's table full, the tail's new values widen the
  // column partway through its table; a wide head; a wide tail.
  std::vector<uint64_t> full, fresh, wide;
  for (uint64_t i = 0; i < 65530; ++i) full.push_back(i * 3);
  for (uint64_t i = 0; i < 20; ++i) fresh.push_back(i % 2 ? i * 3 : 1000000 + i);  // old and new values
  for (uint64_t i = 0; i < 70000; ++i) wide.push_back(i * 5);
  check_append(full, fresh);
  check_append(wide, fresh);
  check_append(fresh, wide);
  check_append(full, full);
}

TEST_CASE("a trace's append equals pushing its events") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{4095}, size_t{5000}})
    for (size_t m : {size_t{0}, size_t{1}, size_t{9000}})
      for (size_t turn : {size_t{0}, size_t{4500}}) {
        CAPTURE(n);
        CAPTURE(m);
        CAPTURE(turn);
        auto head = events(n, n), tail = events(m, turn);
        // Times far from the head's, so that some escape in the joined blocks.
        for (size_t j = 0; j < tail.size(); ++j)
          if (tail[j].time_us != TraceEvent::kNoTime && j % 3 == 0) tail[j].time_us += int64_t{1} << 40;
        Trace a, b, src;
        for (const auto& e : head) a.push_back(e), b.push_back(e);
        for (auto e : tail) {
          src.push_back(e);
          e.stack = StackId{e.stack.v * 2 + 1};
          a.push_back(e);
        }
        b.append(src, [](uint32_t s) { return s * 2 + 1; });
        REQUIRE(b.size() == a.size());
        size_t bad = 0;
        for (size_t i = 0; i < a.size(); ++i) bad += !same(a[i], b[i]);
        CHECK(bad == 0);
      }
}
