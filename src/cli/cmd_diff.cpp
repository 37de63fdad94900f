// `memsnap diff BEFORE AFTER`: what changed between two snapshots; --fail-if-growth for CI.
#include <memory>

#include "common.hpp"
#include "memsnap/app/diff_command.hpp"

namespace memsnap::cli {

void add_diff(CLI::App& app) {
  auto args = std::make_shared<app::DiffRequest>();
  CLI::App* cmd = app.add_subcommand("diff", "What changed between two snapshots of one job, by allocation site");
  cmd->add_option("BEFORE", args->before, "The earlier snapshot")->required();
  cmd->add_option("AFTER", args->after, "The later snapshot")->required();
  add_common_options(*cmd, args->common);
  cmd->add_option("--fail-if-growth", args->fail_if_growth,
                  "Exit with status 1 when allocated memory grew by more than SIZE on any device "
                  "(e.g. 512MiB, 1.5GiB, 200MB)")
      ->option_text("SIZE");
  cmd->add_option("--top", args->top, "Changed sites listed in the text table (default 20)")->option_text("N");
  cmd->add_flag("--flame", args->flame,
                "Differential flame: folded 'stack BEFORE AFTER' lines, or an SVG with -o OUT.svg (red grew, "
                "blue shrank)");
  cmd->add_option("-o,--output", args->output, "With --flame: the output file (.svg for a picture; default -)")
      ->option_text("OUT");
  add_max_output_option(*cmd, args->max_output);
  cmd->add_option("--file", args->file_view,
                  "One source file's memory by line in both snapshots, and the change (PATH matches a frame's "
                  "file by its last components)")
      ->option_text("PATH");
  cmd->callback([args] { app::run_diff(*args, text_style(args->common)); });
}

}  // namespace memsnap::cli
