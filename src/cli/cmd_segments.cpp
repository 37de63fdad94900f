// `memsnap segments FILE`: the segment map, worst fragmented first.
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/report/segments.hpp"

namespace memsnap::cli {

namespace {
struct SegmentsArgs {
  std::string file;
  long long top = 20;
  CommonOptions common;
};
}  // namespace

void add_segments(CLI::App& app) {
  auto args = std::make_shared<SegmentsArgs>();
  CLI::App* cmd = app.add_subcommand("segments", "The segment map: each segment's blocks to scale, worst fragmented first");
  cmd->add_option("FILE", args->file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")
      ->required();
  cmd->add_option("--top", args->top, "Segments shown per device (default 20; 0 shows all)")->option_text("N");
  add_common_options(*cmd, args->common);
  cmd->parse_complete_callback([args] {
    if (args->top < 0) throw Failure("--top: must be 0 (all) or more, got " + std::to_string(args->top), kBadInput);
  });
  cmd->callback([args] {
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    analysis::Sites sites(loaded.snapshot);
    std::vector<analysis::Fragmentation> frag;
    std::vector<std::vector<uint32_t>> order;
    for (const auto& d : loaded.snapshot.devices) {
      frag.push_back(analysis::analyze_fragmentation(loaded.snapshot, d, sites));
      order.push_back(analysis::segments_worst_first(d, frag.back()));
    }
    report::SegmentsView view{&loaded.input, &loaded.snapshot, &frag, &order, &sites, size_t(args->top)};
    if (args->common.format == Format::Json) report::write_segments_json(std::cout, view);
    else report::write_segments_text(std::cout, view, text_style(args->common));
  });
}

}  // namespace memsnap::cli
