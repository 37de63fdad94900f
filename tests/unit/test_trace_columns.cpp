// Trace columns: every field of every event reads back as pushed, whichever columns
// stay constant (no stacks, one stream, one 4 GiB region) and wherever a column turns
// varying (first event, middle, last), and through copies and stack renumbering.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/dict_column.hpp"
#include "memsnap/util/lazy_column.hpp"

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
