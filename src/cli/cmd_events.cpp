// `memsnap events FILE`: trace events in order around an OOM, the peak or an index.
#include <algorithm>
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/analysis/events.hpp"
#include "memsnap/report/events.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {
struct EventsArgs {
  std::string file;
  CommonOptions common;
  std::optional<int> device;
  std::string around;
  size_t count = 40;
  bool stacks = false;
};
}  // namespace

void add_events(CLI::App& app) {
  auto args = std::make_shared<EventsArgs>();
  CLI::App* cmd = app.add_subcommand("events",
                                     "Trace events in order: what happened before an OOM, around the peak, "
                                     "or at any event");
  add_file_option(*cmd, args->file);
  add_common_options(*cmd, args->common);
  cmd->add_option("--device", args->device, "Only this device (default: all)")->option_text("N");
  cmd->add_option("--around", args->around,
                  "oom (the first out-of-memory event), peak (the allocated peak) or an event INDEX; the listing "
                  "shows mostly what led to it (default: from the first event)")
      ->option_text("oom|peak|INDEX");
  cmd->add_option("--count", args->count, "Events listed per device (default 40)")
      ->check(CLI::Range(size_t{1}, size_t{10000000}))
      ->option_text("N");
  cmd->add_flag("--stacks", args->stacks, "Print each event's whole stack (noise frames filtered)");
  cmd->callback([args] {
    io::OutputFile output = app::open_output("-", {args->file});
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    const auto& snap = loaded.snapshot;
    if (args->device && !snap.device(*args->device))
      throw Failure("--device " + std::to_string(*args->device) + ": the snapshot has no such device", kBadInput);
    analysis::Context ctx(snap, code_rules());
    analysis::EventsOptions options{args->around, args->count, args->stacks};
    std::vector<analysis::DeviceEvents> devices;
    std::optional<int64_t> origin;
    for (const auto& d : snap.devices)
      for (const auto& e : d.trace)
        if (e.has_time()) {
          if (!origin || e.time_us < *origin) origin = e.time_us;
          break;
        }
    for (const auto& d : snap.devices) {
      if (args->device && d.index != *args->device) continue;
      devices.push_back(analysis::list_events(ctx, d, options));
    }
    // --around oom on a file without one: one line, as for an event index the file lacks.
    if (args->around == "oom" && std::none_of(devices.begin(), devices.end(), [](const auto& d) { return d.center; }))
      throw Failure(
          "--around oom: " +
              std::string(args->device ? "device " + std::to_string(*args->device) + "'s trace" : "the trace") +
              " records no OOM event (--around peak lists what led to the peak)",
          kBadInput);
    report::Source src{loaded.input, ctx};
    app::write_output(output, [&](std::ostream& out) {
      if (args->common.format == Format::Json)
        report::write_events_json(out, src, devices, origin);
      else
        report::write_events_text(out, src, devices, origin, text_style(args->common));
    });
  });
}

}  // namespace memsnap::cli
