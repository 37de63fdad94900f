// `memsnap merge A.json B.json ... | -`: its options; app::run_merge does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/merge_command.hpp"

namespace memsnap::cli {

void add_merge(CLI::App& app) {
  auto args = std::make_shared<app::MergeRequest>();
  CLI::App* cmd =
      app.add_subcommand("merge", "One fleet summary from analyze --format json outputs (or earlier merges)");
  cmd->add_option("FILE", args->files, "analyze --format json or merge --format json outputs (- for stdin, once)")
      ->required();
  cmd->add_option("--format", args->common.format, "Output format: text (default) or json (which merge reads back)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"text", Format::Text}, {"json", Format::Json}},
                                          CLI::ignore_case))
      ->option_text("text|json");
  cmd->add_flag("--no-color", args->common.no_color, "Never colour the text output (NO_COLOR is honoured too)");
  add_max_memory_option(*cmd, args->common.max_memory);
  cmd->footer(
      "Rows are sorted by file name and every figure of the fleet object is computed\n"
      "from them, so merging is associative and does not depend on the input order.");
  cmd->callback([args] { app::run_merge(*args, text_style(args->common)); });
}

}  // namespace memsnap::cli
