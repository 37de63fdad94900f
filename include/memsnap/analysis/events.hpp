// The trace as a list: the events around an OOM, the peak or any index, each with
// the allocator's totals right after it (what users otherwise open PyTorch's
// `_memory_viz.py trace` for).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct EventsOptions {
  /// "oom" (the first OOM event), "peak" (the allocated peak), or an event index;
  /// empty: from the first event.
  std::string around;
  size_t count = 40;    // events listed (centred on `around`)
  bool stacks = false;  // the whole filtered stack of each event
};

struct EventRow {
  uint32_t index = 0;
  std::optional<int64_t> time_us;
  snapshot::Action action = snapshot::Action::Unknown;
  std::string action_name;  // as the file spells it ("alloc", "segment_map", or an unknown one)
  uint64_t size = 0;
  std::optional<uint64_t> address;      // absent for oom
  std::optional<uint64_t> device_free;  // oom only
  uint64_t stream = 0;
  std::string site;
  std::vector<std::string> stack;  // with EventsOptions::stacks
  uint64_t allocated_after = 0, reserved_after = 0;
};

struct DeviceEvents {
  int device = 0;
  uint64_t entries = 0;
  std::optional<uint32_t> center;  // the event `around` named
  std::string center_what;         // "oom", "peak", "index"
  std::vector<EventRow> rows;
};

/// Why trace event `index` is not one of the device's, for an option's error message
/// ("device 0 has 5 trace entries (valid indices 0 to 4)"); empty when it is one.
std::string event_index_problem(const snapshot::Device& device, uint64_t index);
/// Why no trace event is at or before `time_us` on the device ("device 0's first timed
/// trace entry is at 1700000000000000 us"); empty when one is.
std::string event_time_problem(const snapshot::Device& device, int64_t time_us);

/// Without --device, an event index (or time) applies to the devices whose trace holds it: those
/// are kept, and `left_out` gets one line for each device dropped ("device 1: no trace entries").
/// When no device holds it: a UsageError "OPTION: no device has it (device 0 has ...; device 1 ...)".
std::vector<const snapshot::Device*> devices_with_event(const std::vector<const snapshot::Device*>& devices,
                                                        const std::string& option, std::optional<uint64_t> index,
                                                        std::optional<int64_t> time_us,
                                                        std::vector<std::string>& left_out);

/// Throws UsageError when `around` names no event (no OOM, an index out of range).
DeviceEvents list_events(const Context& ctx, const snapshot::Device& device, const EventsOptions& options);

}  // namespace memsnap::analysis
