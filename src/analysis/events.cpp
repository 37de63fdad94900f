// Trace events around a point, with the totals after each from one replay.
#include "memsnap/analysis/events.hpp"

#include <charconv>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/util/error.hpp"

namespace memsnap::analysis {

using snapshot::Action;

std::string event_index_problem(const snapshot::Device& d, uint64_t index) {
  const uint64_t n = d.trace.size();
  std::string dev = "device " + std::to_string(d.index);
  if (n == 0) return dev + " has no trace entries";
  if (index < n) return {};
  if (n == 1) return dev + " has 1 trace entry (valid index 0)";
  return dev + " has " + std::to_string(n) + " trace entries (valid indices 0 to " + std::to_string(n - 1) + ")";
}

std::string event_time_problem(const snapshot::Device& d, int64_t time_us) {
  std::string dev = "device " + std::to_string(d.index);
  if (d.trace.empty()) return dev + " has no trace entries";
  std::optional<int64_t> first;
  for (const auto& e : d.trace)
    if (e.has_time() && (!first || e.time_us < *first)) first = e.time_us;
  if (!first) return dev + "'s trace entries carry no time (use --at INDEX)";
  if (*first <= time_us) return {};
  return dev + "'s first timed trace entry is at " + std::to_string(*first) + " us";
}

std::vector<const snapshot::Device*> devices_with_event(const std::vector<const snapshot::Device*>& devices,
                                                        const std::string& option, std::optional<uint64_t> index,
                                                        std::optional<int64_t> time_us,
                                                        std::vector<std::string>& left_out) {
  std::vector<const snapshot::Device*> kept;
  std::vector<std::string> why;
  for (const snapshot::Device* d : devices) {
    std::string problem = index ? event_index_problem(*d, *index) : time_us ? event_time_problem(*d, *time_us) : "";
    if (problem.empty())
      kept.push_back(d);
    else
      why.push_back(std::move(problem));
  }
  if (kept.empty()) {
    std::string all;
    for (const auto& w : why) all += (all.empty() ? "" : "; ") + w;
    throw UsageError(option + ": no device's trace holds it (" + all + ")");
  }
  for (auto& w : why) left_out.push_back(option + ": left out, as " + w);
  return kept;
}

DeviceEvents list_events(const Context& ctx, const snapshot::Device& d, const EventsOptions& o) {
  DeviceEvents out;
  out.device = d.index;
  out.entries = d.trace.size();
  if (d.trace.empty()) {
    if (!o.around.empty() && o.around != "oom" && o.around != "peak")
      throw UsageError("--around " + o.around + ": device " + std::to_string(d.index) + " has no trace entries");
    return out;
  }
  Replay replay(ctx, d);
  const uint32_t n = static_cast<uint32_t>(d.trace.size());
  if (o.around == "oom") {
    if (replay.ooms().empty()) return out;  // no OOM on this device: nothing to list
    out.center = replay.ooms().front().event;
    out.center_what = "oom";
  } else if (o.around == "peak") {
    out.center = replay.peak_allocated()->event;
    out.center_what = "peak";
  } else if (!o.around.empty()) {
    uint64_t v = 0;
    auto r = std::from_chars(o.around.data(), o.around.data() + o.around.size(), v);
    if (r.ec != std::errc() || r.ptr != o.around.data() + o.around.size())
      throw UsageError("--around " + o.around + ": expected oom, peak or an event index");
    if (std::string why = event_index_problem(d, v); !why.empty())
      throw UsageError("--around " + o.around + ": " + why);
    out.center = static_cast<uint32_t>(v);
    out.center_what = "index";
  }
  size_t count = std::max<size_t>(1, o.count);
  uint32_t first = 0;
  if (out.center) {
    // The centre and what led to it: three quarters of the rows before it.
    size_t before = count - 1 - (count - 1) / 4;
    first = *out.center > before ? static_cast<uint32_t>(*out.center - before) : 0;
  }
  uint32_t last = static_cast<uint32_t>(std::min<uint64_t>(n, uint64_t(first) + count));
  if (out.center && last - first < count && first > 0) first = last > count ? static_cast<uint32_t>(last - count) : 0;
  TotalsCursor totals(replay);
  for (uint32_t i = first; i < last; ++i) {
    const auto& e = d.trace[i];
    EventRow row;
    row.index = i;
    if (e.has_time()) row.time_us = e.time_us;
    row.action = e.action;
    row.action_name = snapshot::to_string(e.action);
    row.size = e.size;
    if (e.action == Action::Oom)
      row.device_free = e.device_free();
    else
      row.address = e.addr;
    row.stream = e.stream;
    row.site = e.stack.v ? ctx.sites.site(e.stack) : std::string();
    if (o.stacks) row.stack = ctx.sites.stack(e.stack);
    row.allocated_after = totals.after(i).allocated;
    row.reserved_after = totals.after(i).reserved;
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace memsnap::analysis
