// `memsnap merge A.json B.json ... | -`: the fleet summary of analyze JSON outputs (one file's,
// many files', or earlier merges'), as text or as a JSON document merge itself reads back.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "common.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {

struct MergeArgs {
  std::vector<std::string> files;
  CommonOptions common;
};

}  // namespace

void add_merge(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
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
  cmd->callback([args] {
    if (std::count(args->files.begin(), args->files.end(), std::string("-")) > 1)
      throw Failure("- (stdin) can be given once", kBadInput);
    io::OutputFile output = app::open_output("-", args->files);  // never `merge X >> X`
    auto limit = parse_size(args->common.max_memory);
    if (!limit || *limit == 0) throw Failure("--max-memory: not a size: '" + args->common.max_memory + "'", kBadInput);
    report::Fleet fleet;
    report::FleetReadOptions read;
    read.keep_files = args->common.format == Format::Json;
    read.max_bytes = *limit;
    for (const auto& path : args->files) {
      std::string shown = terminal_safe(shown_path(path));
      read.shard = shown_path(path);
      try {
        report::add_fleet_input(fleet, read_json_input(path, *limit), read);
      } catch (const report::FleetFormatError& e) {
        throw Failure(shown + ": " + terminal_safe(e.what()), kBadInput);
      }
    }
    report::finish_fleet(fleet);
    if (args->common.format == Format::Json)
      report::write_fleet_json(std::cout, fleet);
    else
      report::write_fleet_text(std::cout, fleet, text_style(args->common));
    std::cout.flush();
    if (report::fleet_incomplete(fleet))
      throw Failure("the fleet is incomplete: " + std::to_string(fleet.errors.size()) + " unreadable, " +
                        std::to_string(fleet.missing.size()) + " missing, " +
                        std::to_string(analysis::doubled_files(fleet.rows).size()) + " counted twice",
                    kBadInput);
  });
}

}  // namespace memsnap::cli
