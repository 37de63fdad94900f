// `memsnap segments FILE`: the segment map, worst fragmented first.
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/replay.hpp"
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
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    const auto& snap = loaded.snapshot;
    check_device(args->state, snap);
    analysis::Sites sites(snap);
    std::vector<snapshot::Device> states;
    std::vector<std::optional<report::AtPoint>> ats;
    std::vector<analysis::Fragmentation> frag;
    std::vector<std::vector<uint32_t>> order;
    for (const auto& d : snap.devices) {
      if (!selected(args->state, d)) continue;
      DeviceState ds = device_state(args->state, snap, d);
      states.push_back(std::move(ds.device));
      ats.push_back(ds.at);
      frag.push_back(analysis::analyze_fragmentation(snap, states.back(), sites));
      order.push_back(analysis::segments_worst_first(states.back(), frag.back()));
    }
    report::SegmentsView view{&loaded.input, &snap, &states, &ats, &frag, &order, &sites, size_t(args->top)};
    if (args->common.format == Format::Json) report::write_segments_json(std::cout, view);
    else report::write_segments_text(std::cout, view, text_style(args->common));
  });
}

}  // namespace memsnap::cli
