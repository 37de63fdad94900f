// `memsnap merge A.json B.json ... | -`: the fleet summary of analyze JSON outputs (one file's,
// many files', or earlier merges'), as text or as a JSON document merge itself reads back.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "common.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "output.hpp"

namespace memsnap::cli {

namespace {

struct MergeArgs {
  std::vector<std::string> files;
  CommonOptions common;
};

std::string read_all(const std::string& path) {
  std::string shown = terminal_safe(shown_path(path));
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure(shown + ": cannot open", kBadInput);
  std::stringstream s;
  s << in.rdbuf();
  if (in.bad()) throw Failure(shown + ": cannot read", kBadInput);
  return std::move(s).str();
}

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_message(const std::string& what) {
  size_t close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
}

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
  cmd->footer(
      "Rows are sorted by file name and every figure of the fleet object is computed\n"
      "from them, so merging is associative and does not depend on the input order.");
  cmd->callback([args] {
    if (std::count(args->files.begin(), args->files.end(), std::string("-")) > 1)
      throw Failure("- (stdin) can be given once", kBadInput);
    io::OutputFile output = open_output("-", args->files);  // never `merge X >> X`
    report::Fleet fleet;
    for (const auto& path : args->files) {
      std::string shown = terminal_safe(shown_path(path));
      report::FleetJson doc;
      try {
        doc = report::FleetJson::parse(read_all(path));
      } catch (const nlohmann::json::exception& e) {
        throw Failure(shown + ": not JSON: " + terminal_safe(json_message(e.what())), kBadInput);
      }
      try {
        report::add_fleet_document(fleet, std::move(doc));
      } catch (const report::FleetFormatError& e) {
        throw Failure(shown + ": " + terminal_safe(e.what()), kBadInput);
      }
    }
    report::finish_fleet(fleet);
    if (args->common.format == Format::Json)
      report::write_fleet_json(std::cout, fleet);
    else
      report::write_fleet_text(std::cout, fleet, text_style(args->common));
  });
}

}  // namespace memsnap::cli
