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
  cmd->add_option("FILE", args->file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")
      ->required();
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
      if (args->state.device && d.index != *args->state.device) continue;
      if (auto at = resolve_at(args->state, d)) {
        analysis::Replay replay(snap, d);
        analysis::ReplayState st = replay.state_after(*at);
        states.push_back(st.to_device(d.index));
        const auto& e = d.trace[*at];
        ats.push_back(report::AtPoint{*at, e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt,
                                      st.estimated_live_blocks()});
      } else {
        states.push_back(d);
        ats.push_back(std::nullopt);
      }
      frag.push_back(analysis::analyze_fragmentation(snap, states.back(), sites));
      order.push_back(analysis::segments_worst_first(states.back(), frag.back()));
    }
    report::SegmentsView view{&loaded.input, &snap, &states, &ats, &frag, &order, &sites, size_t(args->top)};
    if (args->common.format == Format::Json) report::write_segments_json(std::cout, view);
    else report::write_segments_text(std::cout, view, text_style(args->common));
  });
}

}  // namespace memsnap::cli
