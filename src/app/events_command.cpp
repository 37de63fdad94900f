// `memsnap events FILE`: trace events in order around an OOM, the peak or an index.
#include "memsnap/app/events_command.hpp"

#include <algorithm>
#include <charconv>
#include <iostream>

#include "memsnap/analysis/events.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/report/events.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::app {

void run_events(const EventsRequest& request, const report::TextStyle& style, std::ostream* into) {
  io::OutputFile output = open_results(into, {request.file});
  snapshot::Loaded loaded = load(request.file, request.common);
  print_warnings(loaded);
  const auto& snap = loaded.snapshot;
  if (request.device && !snap.device(*request.device))
    throw Failure("--device " + std::to_string(*request.device) + ": the snapshot has no such device", kBadInput);
  analysis::Context ctx(snap, code_rules());
  analysis::EventsOptions options{request.around, request.count, request.stacks};
  std::vector<analysis::DeviceEvents> devices;
  std::optional<int64_t> origin;
  for (const auto& d : snap.devices)
    for (const auto& e : d.trace)
      if (e.has_time()) {
        if (!origin || e.time_us < *origin) origin = e.time_us;
        break;
      }
  std::vector<const snapshot::Device*> chosen;
  for (const auto& d : snap.devices)
    if (!request.device || d.index == *request.device) chosen.push_back(&d);
  // --around INDEX without --device: the devices whose trace holds that event
  uint64_t index = 0;
  auto [end, ec] = std::from_chars(request.around.data(), request.around.data() + request.around.size(), index);
  if (!request.device && chosen.size() > 1 && ec == std::errc() && !request.around.empty() &&
      end == request.around.data() + request.around.size()) {
    std::vector<std::string> left_out;
    chosen = analysis::devices_with_event(chosen, "--around " + request.around, index, std::nullopt, left_out);
    for (const auto& l : left_out) std::cerr << "memsnap: note: " << terminal_safe(l) << '\n';
  }
  for (const snapshot::Device* d : chosen) devices.push_back(analysis::list_events(ctx, *d, options));
  // --around oom on a file without one: one line, as for an event index the file lacks.
  if (request.around == "oom" && std::none_of(devices.begin(), devices.end(), [](const auto& d) { return d.center; }))
    throw Failure(
        "--around oom: " +
            std::string(request.device ? "device " + std::to_string(*request.device) + "'s trace" : "the trace") +
            " records no OOM event (--around peak lists what led to the peak)",
        kBadInput);
  report::Source src{loaded.input, ctx};
  write_output(output, [&](std::ostream& out) {
    if (request.common.format == Format::Json)
      report::write_events_json(out, src, devices, origin);
    else
      report::write_events_text(out, src, devices, origin, style);
  });
}

}  // namespace memsnap::app
