// `memsnap analyze FILE`: totals per device (and, as analyses land, their sections).
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/analysis/summary.hpp"
#include "analyze_fragmentation.hpp"  // issue 3

namespace memsnap::cli {

namespace {
struct AnalyzeArgs {
  std::string file;
  CommonOptions common;
  FitsOptions fits;  // issue 3
};
}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand("analyze", "Where the GPU memory went: totals, free memory, pools, trace");
  cmd->add_option("FILE", args->file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")
      ->required();
  add_common_options(*cmd, args->common);
  add_fits_options(*cmd, args->fits);  // issue 3
  cmd->callback([args] {
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    auto totals = analysis::summarize(loaded.snapshot);
    report::AnalyzeView view{&loaded.input, &loaded.snapshot, &totals};
    FragmentationResults frag;  // issue 3: fragmentation, --fits, findings
    run_fragmentation(loaded.snapshot, args->fits, frag, view);
    if (args->common.format == Format::Json) report::write_analyze_json(std::cout, view);
    else report::write_analyze_text(std::cout, view, text_style(args->common));
  });
}

}  // namespace memsnap::cli
