// `memsnap analyze FILE`: totals per device, the trace (peak, iterations, leaks) and findings.
#include <iostream>
#include <memory>
#include <optional>

#include "common.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/util/units.hpp"
#include "analyze_fragmentation.hpp"

namespace memsnap::cli {

namespace {

struct AnalyzeArgs {
  std::string file;
  CommonOptions common;
  StateOptions state;
  std::string iteration_marker;
  std::string capacity;
  std::string oom_size;
  FitsOptions fits;
};

}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand("analyze", "Where the GPU memory went: totals, free memory, peak, leaks");
  add_file_option(*cmd, args->file);
  add_common_options(*cmd, args->common);
  add_state_options(*cmd, args->state);
  cmd->add_option("--iteration-marker", args->iteration_marker,
                  "Where iterations start: a record_function annotation name, a site (train.py:110) whose "
                  "every allocation opens one, or a function name (default: Optimizer.step annotations, else "
                  "the repeating step found in the trace)")
      ->option_text("NAME");
  cmd->add_option("--capacity", args->capacity,
                  "The GPU's total memory (e.g. 80GiB): lets the OOM analysis tell memory held outside "
                  "PyTorch's allocator")
      ->option_text("SIZE");
  cmd->add_option("--oom-size", args->oom_size,
                  "Explain an OOM the trace does not hold, using the dumped state: the \"Tried to allocate\" "
                  "size from the error message")
      ->option_text("SIZE");
  add_fits_options(*cmd, args->fits);
  cmd->callback([args] {
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    const auto& snap = loaded.snapshot;
    check_device(args->state, snap);

    analysis::Sites sites(snap);
    analysis::TraceOptions topt;
    topt.iteration_marker = args->iteration_marker;
    analysis::OomOptions oopt;
    auto size_option = [](const std::string& text, const char* name) -> std::optional<uint64_t> {
      if (text.empty()) return std::nullopt;
      auto v = parse_size(text);
      if (!v || *v == 0) throw Failure(std::string(name) + ": not a size: '" + text + "'", kBadInput);
      return v;
    };
    oopt.capacity = size_option(args->capacity, "--capacity");
    oopt.assumed_request = size_option(args->oom_size, "--oom-size");
    std::vector<std::vector<analysis::OomReport>> ooms;
    std::vector<std::vector<analysis::Finding>> findings;
    std::vector<analysis::DeviceTotals> totals;
    std::vector<analysis::TraceAnalysis> traces;
    std::vector<std::optional<report::AtPoint>> ats;
    std::vector<analysis::Fragmentation> frags;
    std::vector<analysis::FitsAnswer> fits;
    std::optional<analysis::FitsQuery> fits_request = parse_fits(args->fits);
    for (const auto& d : snap.devices) {
      if (!selected(args->state, d)) continue;
      analysis::Replay replay(snap, d);
      // Totals, fragmentation and --fits describe this state; the trace sections the whole file.
      DeviceState ds = device_state(args->state, snap, d, &replay);
      const snapshot::Device* state = &ds.device;
      ats.push_back(ds.at);
      totals.push_back(analysis::summarize(*state));
      frags.push_back(analysis::analyze_fragmentation(snap, *state, sites));
      if (fits_request) fits.push_back(analysis::would_fit(*state, snap.settings, *fits_request));
      traces.push_back(analysis::analyze_trace(snap, d, replay, sites, topt));
      ooms.push_back(analysis::analyze_ooms(snap, d, replay, sites, traces.back(), oopt));
      // Findings, most urgent first: the OOM, then leaks, then the state's fragmentation.
      auto& f = findings.emplace_back(analysis::oom_findings(ooms.back()));
      f.insert(f.end(), traces.back().findings.begin(), traces.back().findings.end());
      auto frag_findings = analysis::fragmentation_findings(frags.back(), snap.settings);
      f.insert(f.end(), frag_findings.begin(), frag_findings.end());
    }
    report::AnalyzeView view{&loaded.input, &snap, &totals, &traces, &ats, &ooms, &frags,
                             fits_request ? &fits : nullptr, &findings};
    if (args->common.format == Format::Json) report::write_analyze_json(std::cout, view);
    else report::write_analyze_text(std::cout, view, text_style(args->common));
  });
}

}  // namespace memsnap::cli
