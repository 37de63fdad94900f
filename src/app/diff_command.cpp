// `memsnap diff BEFORE AFTER`: what changed between two snapshots; --fail-if-growth for CI.
#include "memsnap/app/diff_command.hpp"

#include <future>
#include <iostream>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/app/file_view.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/report/diff.hpp"
#include "memsnap/report/file_lines.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

void run_diff(const DiffRequest& request, const report::TextStyle& style, std::ostream* into) {
  std::optional<uint64_t> limit;
  if (!request.fail_if_growth.empty()) {
    limit = parse_size(request.fail_if_growth);
    if (!limit) throw Failure("--fail-if-growth: not a size: '" + request.fail_if_growth + "'", kBadInput);
  }
  if (request.before == "-" && request.after == "-") throw Failure("only one of BEFORE and AFTER can be -", kBadInput);
  if (request.flame && request.common.format == Format::Json)
    throw Failure("--flame and --format json: choose one", kBadInput);
  if (!request.flame && !request.output.empty()) throw Failure("-o: only with --flame", kBadInput);
  if (request.flame && !request.file_view.empty()) throw Failure("--flame and --file: choose one", kBadInput);
  // Refused (an input as the target) or unwritable before the work.
  io::OutputFile output = request.output.empty() ? open_results(into, {request.before, request.after})
                                                 : open_output(request.output, {request.before, request.after});
  // The two inputs are independent: parse them on both cores.
  auto later = std::async(std::launch::async, [&] { return load(request.after, request.common); });
  snapshot::Loaded before = load(request.before, request.common);
  snapshot::Loaded after = later.get();
  print_warnings(before);
  print_warnings(after);
  bound_output(output, request.max_output, before.input.decoded_bytes + after.input.decoded_bytes);
  analysis::Context before_ctx(before.snapshot, code_rules()), after_ctx(after.snapshot, code_rules());
  if (!request.file_view.empty()) {
    // Both sides must hold the file: a query that matches neither is the usual one-line error.
    analysis::FileMatch in_before = analysis::match_file(before.snapshot, request.file_view);
    analysis::FileMatch in_after = analysis::match_file(after.snapshot, request.file_view);
    if (in_before.files.empty() && in_after.files.empty())
      file_view(before.snapshot, shown_path(request.before), request.file_view, std::nullopt);  // throws
    analysis::FileLines a{request.file_view, {}, {}}, b{request.file_view, {}, {}};
    if (!in_before.files.empty()) a = file_view(before.snapshot, shown_path(request.before), request.file_view, {});
    if (!in_after.files.empty()) b = file_view(after.snapshot, shown_path(request.after), request.file_view, {});
    report::Source src_a{before.input, before_ctx}, src_b{after.input, after_ctx};
    write_output(output, [&](std::ostream& out) {
      if (request.common.format == Format::Json)
        report::write_diff_file_lines_json(out, src_a, src_b, a, b);
      else
        report::write_diff_file_lines_text(out, src_a, src_b, a, b, style);
    });
    return;
  }
  analysis::ProcessMatch process = analysis::match_processes(before.snapshot, after.snapshot);
  auto devices = analysis::diff_snapshots(before_ctx, after_ctx, process);
  report::DiffView view{{before.input, before_ctx}, {after.input, after_ctx}, devices, request.top, process};
  if (request.flame)
    write_diff_flame(before, after, output, request.common.quiet);
  else
    write_output(output, [&](std::ostream& out) {
      if (request.common.format == Format::Json)
        report::write_diff_json(out, view);
      else
        report::write_diff_text(out, view, style);
    });
  if (limit) {
    for (const auto& d : devices) {
      if (d.after.allocated_bytes <= d.before.allocated_bytes) continue;
      uint64_t grew = d.after.allocated_bytes - d.before.allocated_bytes;
      if (grew > *limit) {
        output.stream().flush();
        throw Failure("allocated memory grew by " + human_bytes(grew) + " on device " + std::to_string(d.device) +
                          " (" + human_bytes(d.before.allocated_bytes) + " -> " + human_bytes(d.after.allocated_bytes) +
                          "), more than --fail-if-growth " + human_bytes(*limit),
                      kCheckFailed);
      }
    }
  }
}

}  // namespace memsnap::app
