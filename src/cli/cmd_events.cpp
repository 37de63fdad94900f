// `memsnap events FILE`: its options; app::run_events does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/events_command.hpp"

namespace memsnap::cli {

void add_events(CLI::App& app) {
  auto args = std::make_shared<app::EventsRequest>();
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
  cmd->callback([args] { app::run_events(*args, text_style(args->common)); });
}

}  // namespace memsnap::cli
