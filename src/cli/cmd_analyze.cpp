// `memsnap analyze FILE`: options -> load -> analyze -> print.
#include <iostream>
#include <memory>
#include <optional>

#include "common.hpp"
#include "fits_option.hpp"
#include "memsnap/util/units.hpp"

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

std::optional<uint64_t> size_option(const std::string& text, const char* name) {
  if (text.empty()) return std::nullopt;
  auto v = parse_size(text);
  if (!v || *v == 0) throw Failure(std::string(name) + ": not a size: '" + text + "'", kBadInput);
  return v;
}

}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand("analyze", "Where the GPU memory went: totals, free memory, peak, leaks, OOMs");
  add_file_option(*cmd, args->file);
  add_common_options(*cmd, args->common);
  add_state_options(*cmd, args->state);
  cmd->add_option("--iteration-marker", args->iteration_marker,
                  "Where iterations start: a record_function annotation name, a site (train.py:110) whose "
                  "every allocation opens one, or a function name (default: Optimizer.step annotations, else "
                  "a repeating step with backward and optimizer work, or whole repeated passes)")
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
    analysis::AnalyzeOptions options;
    apply(args->state, options);
    options.iterations.marker = args->iteration_marker;
    options.oom.capacity = size_option(args->capacity, "--capacity");
    options.oom.assumed_request = size_option(args->oom_size, "--oom-size");
    options.fits = parse_fits(args->fits);

    snapshot::Loaded loaded = load(args->file, args->common);
    analysis::Context ctx(loaded.snapshot);
    analysis::AnalyzeResult result = analysis::analyze(ctx, options);
    print_warnings(loaded, result.warnings);
    report::Source src{loaded.input, ctx};
    if (args->common.format == Format::Json) report::write_analyze_json(std::cout, src, result);
    else report::write_analyze_text(std::cout, src, result, text_style(args->common));
  });
}

}  // namespace memsnap::cli
