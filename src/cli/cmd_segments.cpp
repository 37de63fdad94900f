// `memsnap segments FILE`: options -> load -> analyze (state only) -> print the segment map.
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/report/segments.hpp"

namespace memsnap::cli {

namespace {
struct SegmentsArgs {
  std::string file;
  long long top = 20;
  CommonOptions common;
  StateOptions state;
};
}  // namespace

void add_segments(CLI::App& app) {
  auto args = std::make_shared<SegmentsArgs>();
  CLI::App* cmd = app.add_subcommand("segments", "The segment map: each segment's blocks to scale, worst fragmented first");
  add_file_option(*cmd, args->file);
  cmd->add_option("--top", args->top, "Segments shown per device (default 20; 0 shows all)")->option_text("N");
  add_common_options(*cmd, args->common);
  add_state_options(*cmd, args->state);
  cmd->parse_complete_callback([args] {
    if (args->top < 0) throw Failure("--top: must be 0 (all) or more, got " + std::to_string(args->top), kBadInput);
  });
  cmd->callback([args] {
    analysis::AnalyzeOptions options;
    apply(args->state, options);
    options.trace = false;  // the segment map needs the state only
    snapshot::Loaded loaded = load(args->file, args->common);
    analysis::Context ctx(loaded.snapshot);
    analysis::AnalyzeResult result = analysis::analyze(ctx, options);
    print_warnings(loaded, result.warnings);
    report::Source src{loaded.input, ctx};
    if (args->common.format == Format::Json) report::write_segments_json(std::cout, src, result, size_t(args->top));
    else report::write_segments_text(std::cout, src, result, size_t(args->top), text_style(args->common));
  });
}

}  // namespace memsnap::cli
