// `memsnap segments FILE...`: its options; app::run_segments does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/segments_command.hpp"

namespace memsnap::cli {

void add_segments(CLI::App& app) {
  auto args = std::make_shared<app::SegmentsRequest>();
  CLI::App* cmd =
      app.add_subcommand("segments", "The segment map: each segment's blocks to scale, worst fragmented first");
  add_files_option(*cmd, args->files);
  cmd->add_option("--top", args->top, "Segments shown per device (default 20; 0 shows all)")->option_text("N");
  add_common_options(*cmd, args->common);
  add_state_options(*cmd, args->state);
  add_jobs_option(*cmd, args->jobs);
  cmd->parse_complete_callback([args] {
    if (args->top < 0) throw Failure("--top: must be 0 (all) or more, got " + std::to_string(args->top), kBadInput);
  });
  cmd->callback([args] { app::run_segments(*args, text_style(args->common)); });
}

}  // namespace memsnap::cli
