// `memsnap flame FILE`: live memory by full call stack, as folded stacks or an SVG flame graph.
#include <memory>

#include "common.hpp"
#include "memsnap/app/stacks.hpp"

namespace memsnap::cli {

void add_flame(CLI::App& app) {
  auto args = std::make_shared<app::FlameRequest>();
  CLI::App* cmd = app.add_subcommand("flame", "Live memory by full call stack: folded stacks or an SVG flame graph");
  add_stack_options(*cmd, args->stack);
  cmd->add_option("-o,--output", args->output, "Output file: .svg for a flame graph, else folded stacks (default: -)")
      ->option_text("OUT");
  cmd->add_option("--format", args->format, "folded or svg (default: svg when OUT ends in .svg, else folded)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, app::FlameFormat>{{"folded", app::FlameFormat::Folded}, {"svg", app::FlameFormat::Svg}},
          CLI::ignore_case))
      ->option_text("FORMAT");
  cmd->add_option("--width", args->width, "SVG width in pixels (default 1200)")
      ->check(CLI::Range(400, 20000))
      ->option_text("W");
  cmd->add_flag("--js", args->script,
                "SVG: embed a small script for click-to-zoom (default: a static picture, no script)");
  cmd->callback([args] { app::run_flame(*args); });
}

}  // namespace memsnap::cli
