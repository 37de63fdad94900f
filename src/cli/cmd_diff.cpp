// `memsnap diff BEFORE AFTER`: what changed between two snapshots; --fail-if-growth for CI.
#include <future>
#include <iostream>
#include <memory>

#include "common.hpp"
#include "flame_state.hpp"
#include "memsnap/analysis/diff.hpp"
#include "memsnap/report/diff.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {
struct DiffArgs {
  std::string before, after;
  CommonOptions common;
  std::string fail_if_growth;
  size_t top = 20;
  bool flame = false;
  std::string output;
  std::string max_output;
};
}  // namespace

void add_diff(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* cmd = app.add_subcommand("diff", "What changed between two snapshots of one job, by allocation site");
  cmd->add_option("BEFORE", args->before, "The earlier snapshot")->required();
  cmd->add_option("AFTER", args->after, "The later snapshot")->required();
  add_common_options(*cmd, args->common);
  cmd->add_option("--fail-if-growth", args->fail_if_growth,
                  "Exit with status 1 when allocated memory grew by more than SIZE on any device "
                  "(e.g. 512MiB, 1.5GiB, 200MB)")
      ->option_text("SIZE");
  cmd->add_option("--top", args->top, "Changed sites listed in the text table (default 20)")->option_text("N");
  cmd->add_flag("--flame", args->flame,
                "Differential flame: folded 'stack BEFORE AFTER' lines, or an SVG with -o OUT.svg (red grew, "
                "blue shrank)");
  cmd->add_option("-o,--output", args->output, "With --flame: the output file (.svg for a picture; default -)")
      ->option_text("OUT");
  add_max_output_option(*cmd, args->max_output);
  cmd->callback([args] {
    std::optional<uint64_t> limit;
    if (!args->fail_if_growth.empty()) {
      limit = parse_size(args->fail_if_growth);
      if (!limit) throw Failure("--fail-if-growth: not a size: '" + args->fail_if_growth + "'", kBadInput);
    }
    if (args->before == "-" && args->after == "-") throw Failure("only one of BEFORE and AFTER can be -", kBadInput);
    if (args->flame && args->common.format == Format::Json)
      throw Failure("--flame and --format json: choose one", kBadInput);
    if (!args->flame && !args->output.empty()) throw Failure("-o: only with --flame", kBadInput);
    // Refused (an input as the target) or unwritable before the work.
    io::OutputFile output = app::open_output(args->output.empty() ? "-" : args->output, {args->before, args->after});
    // The two inputs are independent: parse them on both cores.
    auto later = std::async(std::launch::async, [&] { return load(args->after, args->common); });
    snapshot::Loaded before = load(args->before, args->common);
    snapshot::Loaded after = later.get();
    print_warnings(before);
    print_warnings(after);
    app::bound_output(output, args->max_output, before.input.decoded_bytes + after.input.decoded_bytes);
    analysis::Context before_ctx(before.snapshot, code_rules()), after_ctx(after.snapshot, code_rules());
    analysis::ProcessMatch process = analysis::match_processes(before.snapshot, after.snapshot);
    auto devices = analysis::diff_snapshots(before_ctx, after_ctx, process);
    report::DiffView view{{before.input, before_ctx}, {after.input, after_ctx}, devices, args->top, process};
    if (args->flame)
      write_diff_flame(before, after, output, args->common.quiet);
    else
      app::write_output(output, [&](std::ostream& out) {
        if (args->common.format == Format::Json)
          report::write_diff_json(out, view);
        else
          report::write_diff_text(out, view, text_style(args->common));
      });
    if (limit) {
      for (const auto& d : devices) {
        if (d.after.allocated_bytes <= d.before.allocated_bytes) continue;
        uint64_t grew = d.after.allocated_bytes - d.before.allocated_bytes;
        if (grew > *limit) {
          std::cout.flush();
          throw Failure("allocated memory grew by " + human_bytes(grew) + " on device " + std::to_string(d.device) +
                            " (" + human_bytes(d.before.allocated_bytes) + " -> " +
                            human_bytes(d.after.allocated_bytes) + "), more than --fail-if-growth " +
                            human_bytes(*limit),
                        kCheckFailed);
        }
      }
    }
  });
}

}  // namespace memsnap::cli
