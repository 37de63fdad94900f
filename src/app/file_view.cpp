// One source file's memory by line in a loaded snapshot: the match, then each device's states
// (the dump, the peak as flame rebuilds it, the trace) through analysis::file_lines.
#include "memsnap/app/file_view.hpp"

#include "memsnap/app/load.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::app {

analysis::FileLines file_view(const snapshot::Snapshot& snap, const std::string& shown, const std::string& query,
                              std::optional<int> device) {
  if (device && !snap.device(*device))
    throw Failure("--device " + std::to_string(*device) + ": the snapshot has no such device", kBadInput);
  analysis::FileMatch match = analysis::match_file(snap, query);
  if (match.files.empty()) {
    std::string closest;
    for (const auto& f : match.closest) closest += (closest.empty() ? "" : ", ") + terminal_safe(f).substr(0, 200);
    throw Failure(terminal_safe(shown) + ": --file " + terminal_safe(query).substr(0, 200) +
                      ": no frame's file ends in it" +
                      (closest.empty() ? " (the file records no stacks)" : "; the closest file names: " + closest),
                  kBadInput);
  }
  analysis::FileLines view{query, match.files, {}};
  analysis::StackOptions options;
  options.code = code_rules();
  for (const auto& d : snap.devices) {
    if (device && d.index != *device) continue;
    analysis::FileLinesInput in;
    in.dump = &d;
    in.trace = &d.trace;
    std::optional<FlameState> peak = flame_state(snap, d, FlameAt{FlameAt::Kind::Peak, 0});
    if (peak && peak->rebuilt) {
      in.peak = &*peak->rebuilt;
      if (peak->point.event_index) in.peak_event = int64_t(*peak->point.event_index);
    }
    view.devices.push_back(analysis::file_lines(snap, in, match.files, options));
  }
  return view;
}

}  // namespace memsnap::app
