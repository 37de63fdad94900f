// Checks that two snapshot models hold the same data, device by device (after an export and a re-read).
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::test {

/// The whole model, every table, device and field (Snapshot's defaulted operator==), so a
/// field one parser fills and the other drops fails here; the message names the first one.
inline void check_same_model(const snapshot::Snapshot& a, const snapshot::Snapshot& b) {
  std::string diff = first_difference(a, b);
  CHECK_MESSAGE(a == b, "the two models differ at " << diff);
  CHECK(diff.empty());
}

/// A stack as text ("file:line:name < ..."), memoized per stack id of one snapshot.
class StackText {
 public:
  explicit StackText(const snapshot::Snapshot& s) : s_(s), cache_(s.stacks.size()), done_(s.stacks.size()) {}
  const std::string& operator()(snapshot::StackId id) {
    if (!done_[id.v]) {
      std::string t;
      for (auto f : s_.stacks[id]) t += (t.empty() ? "" : " < ") + s_.frame_text(f);
      cache_[id.v] = std::move(t);
      done_[id.v] = true;
    }
    return cache_[id.v];
  }

 private:
  const snapshot::Snapshot& s_;
  std::vector<std::string> cache_;
  std::vector<bool> done_;
};

/// The same totals, segments (with their blocks and stacks) and trace events.
inline void check_same_device(const snapshot::Snapshot& sa, const snapshot::Device& a, const snapshot::Snapshot& sb,
                              const snapshot::Device& b) {
  CAPTURE(a.index);
  CHECK(a.index == b.index);
  analysis::Context ca(sa), cb(sb);
  auto ta = analysis::account(ca, a), tb = analysis::account(cb, b);
  CHECK(ta.reserved_bytes == tb.reserved_bytes);
  CHECK(ta.allocated_bytes == tb.allocated_bytes);
  CHECK(ta.active_bytes == tb.active_bytes);
  CHECK(ta.requested_bytes == tb.requested_bytes);
  CHECK(ta.external_free_bytes == tb.external_free_bytes);
  CHECK(ta.pending_free_bytes == tb.pending_free_bytes);
  CHECK(ta.largest_free_block_bytes == tb.largest_free_block_bytes);
  CHECK(ta.segment_count == tb.segment_count);
  CHECK(ta.block_count == tb.block_count);
  StackText xa(sa), xb(sb);
  REQUIRE(a.segments.size() == b.segments.size());
  size_t mismatched_blocks = 0;
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const auto &s = a.segments[i], &t = b.segments[i];
    CAPTURE(i);
    CHECK(s.address == t.address);
    CHECK(s.total_size == t.total_size);
    CHECK(s.stream == t.stream);
    CHECK(s.pool == t.pool);
    CHECK(s.expandable == t.expandable);
    CHECK(s.pool_id[0] == t.pool_id[0]);
    CHECK(s.pool_id[1] == t.pool_id[1]);
    CHECK(xa(s.stack) == xb(t.stack));
    auto ba = a.blocks_of(s), bb = b.blocks_of(t);
    REQUIRE(ba.size() == bb.size());
    for (size_t k = 0; k < ba.size(); ++k) {
      bool same =
          ba[k].address == bb[k].address && ba[k].size == bb[k].size && ba[k].state == bb[k].state &&
          (!ba[k].is_active() || (ba[k].requested_size == bb[k].requested_size && xa(ba[k].stack) == xb(bb[k].stack)));
      mismatched_blocks += !same;
    }
  }
  CHECK(mismatched_blocks == 0);
  REQUIRE(a.trace.size() == b.trace.size());
  size_t mismatched_events = 0;
  for (size_t i = 0; i < a.trace.size(); ++i) {
    const auto &e = a.trace[i], &f = b.trace[i];
    bool same = e.action == f.action && e.addr == f.addr && e.size == f.size && e.stream == f.stream &&
                e.time_us == f.time_us && xa(e.stack) == xb(f.stack);
    if (!same && mismatched_events == 0) MESSAGE("first differing trace event: " << i);
    mismatched_events += !same;
  }
  CHECK(mismatched_events == 0);
}

/// Every device of `a` is in `b` with the same data; devices only `b` has are empty.
inline void check_same_snapshot(const snapshot::Snapshot& a, const snapshot::Snapshot& b) {
  for (const auto& d : a.devices) {
    const snapshot::Device* e = b.device(d.index);
    REQUIRE_MESSAGE(e != nullptr, "device " << d.index << " missing");
    check_same_device(a, d, b, *e);
  }
  for (const auto& d : b.devices)
    if (!a.device(d.index)) CHECK((d.segments.empty() && d.trace.empty()));
  CHECK(a.settings.present == b.settings.present);
  CHECK(a.settings.alloc_conf == b.settings.alloc_conf);
  CHECK(a.settings.max_split_size == b.settings.max_split_size);
  CHECK(a.settings.expandable_segments == b.settings.expandable_segments);
  CHECK(a.settings.roundup_power2_divisions == b.settings.roundup_power2_divisions);
  REQUIRE(a.annotations.size() == b.annotations.size());
  for (size_t i = 0; i < a.annotations.size(); ++i) {
    CHECK(a.annotations[i].device == b.annotations[i].device);
    CHECK(a.annotations[i].time_us == b.annotations[i].time_us);
    CHECK(a.strings[a.annotations[i].name] == b.strings[b.annotations[i].name]);
    CHECK(a.strings[a.annotations[i].stage] == b.strings[b.annotations[i].stage]);
  }
}

}  // namespace memsnap::test
