// analysis::event_index_problem / event_time_problem: the one wording every option that
// names a trace event (--at, --around, --from/--to, --at-time) uses when it names none.
#include <doctest/doctest.h>

#include "memsnap/analysis/events.hpp"

using namespace memsnap;

namespace {

snapshot::Device device_with(int index, std::initializer_list<int64_t> times) {
  snapshot::Device d;
  d.index = index;
  uint64_t addr = 0x1000;
  for (int64_t t : times) {
    snapshot::TraceEvent e;
    e.action = snapshot::Action::Alloc;
    e.addr = addr += 0x1000;
    e.size = 512;
    e.time_us = t;
    d.trace.push_back(e);
  }
  return d;
}

}  // namespace

TEST_CASE("event_index_problem: why an index is not one of the device's events") {
  constexpr int64_t kNo = snapshot::TraceEvent::kNoTime;
  CHECK(analysis::event_index_problem(device_with(3, {}), 0) == "device 3 has no trace entries");
  auto one = device_with(0, {kNo});
  CHECK(analysis::event_index_problem(one, 0).empty());
  CHECK(analysis::event_index_problem(one, 1) == "device 0 has 1 trace entry (valid index 0)");
  auto five = device_with(1, {kNo, kNo, kNo, kNo, kNo});
  CHECK(analysis::event_index_problem(five, 4).empty());
  CHECK(analysis::event_index_problem(five, 5) == "device 1 has 5 trace entries (valid indices 0 to 4)");
  CHECK(analysis::event_index_problem(five, UINT64_MAX) == "device 1 has 5 trace entries (valid indices 0 to 4)");
}

TEST_CASE("event_time_problem: why no event is at or before a time") {
  constexpr int64_t kNo = snapshot::TraceEvent::kNoTime;
  CHECK(analysis::event_time_problem(device_with(0, {}), 5) == "device 0 has no trace entries");
  CHECK(analysis::event_time_problem(device_with(2, {kNo, kNo}), 5) ==
        "device 2's trace entries carry no time (use --at INDEX)");
  // The earliest time, not the first entry's: times in a trace need not be in order.
  auto d = device_with(0, {kNo, 300, 200, 400});
  CHECK(analysis::event_time_problem(d, 199) == "device 0's first timed trace entry is at 200 us");
  CHECK(analysis::event_time_problem(d, 200).empty());
  CHECK(analysis::event_time_problem(d, INT64_MAX).empty());
}
