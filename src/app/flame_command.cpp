// `memsnap flame FILE` and `memsnap diff --flame`: live memory by full call stack, as folded
// stacks or an SVG flame graph.
#include <iostream>

#include "memsnap/analysis/stacks.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/report/flame.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

FlameFormat format_for(const std::optional<FlameFormat>& format, const std::string& output) {
  if (format) return *format;
  return output_named(output, ".svg") ? FlameFormat::Svg : FlameFormat::Folded;
}

std::string count(uint64_t n, const char* one, const char* many) {
  return with_commas(n) + " " + (n == 1 ? one : many);
}

}  // namespace

void run_flame(const FlameRequest& request, std::ostream* into) {
  FlameFormat format = format_for(request.format, request.output);
  io::OutputFile output = request.output == "-"
                              ? open_results(into, {request.stack.file})
                              : open_output(request.output, {request.stack.file});  // refused before the work
  LoadedStates ls = load_states(request.stack);
  bound_output(output, request.stack.max_output, ls.loaded.input.decoded_bytes);
  analysis::StackProfile profile = profile_of(ls.loaded.snapshot, ls.states, request.stack.stack);
  size_t left_out = 0;
  write_output(output, [&](std::ostream& out) {
    if (format == FlameFormat::Folded) {
      report::write_folded(out, profile);
      return;
    }
    report::FlameSvgOptions o;
    o.width = request.width;
    o.script = request.script;
    o.unit = request.stack.stack.state == analysis::StackState::All ? "in all blocks (reserved)"
                                                                    : analysis::to_string(request.stack.stack.state);
    o.subtitle_path = ls.source.path;
    o.subtitle = report::describe(ls.source) + ", " + human_bytes(profile.bytes) + " in " +
                 count(profile.blocks, "block", "blocks");
    left_out = report::write_flame_svg(out, analysis::flame_tree(profile), o);
  });
  if (left_out && !request.stack.quiet)
    std::cerr << "memsnap: note: " << count(left_out, "frame", "frames")
              << " narrower than 1 px left out of the flame graph (their bytes are in their callers)\n";
  if (request.output != "-")
    std::cerr << "wrote " << request.output << " (" << count(profile.stacks.size(), "stack", "stacks") << ", "
              << human_bytes(profile.bytes) << " " << analysis::to_string(request.stack.stack.state) << ")\n";
}

void write_diff_flame(const snapshot::Loaded& before, const snapshot::Loaded& after, io::OutputFile& output,
                      bool quiet) {
  // Both dumps as dumped, allocated memory; a <device N> frame when either file has several devices.
  const snapshot::Loaded* files[2] = {&before, &after};
  bool device_root = before.snapshot.devices.size() > 1 || after.snapshot.devices.size() > 1;
  analysis::StackProfile profiles[2];
  for (int i = 0; i < 2; ++i) {
    analysis::StackOptions o;
    o.code = code_rules();
    analysis::StackProfileBuilder b(files[i]->snapshot, o);
    for (const auto& d : files[i]->snapshot.devices) b.add(d, device_root);
    profiles[i] = b.take();
  }
  analysis::DiffProfile diff = analysis::diff_profiles(profiles[0], profiles[1]);
  std::string target = output.is_stdout() ? "-" : output.shown();
  size_t left_out = 0;
  write_output(output, [&](std::ostream& out) {
    if (format_for(std::nullopt, target) == FlameFormat::Svg) {
      report::FlameSvgOptions o;
      auto shown = [](const snapshot::Loaded& l) {
        return l.input.path == "-" ? std::string("<stdin>") : l.input.path;
      };
      o.subtitle = shown(before) + " (" + human_bytes(diff.before) + ") -> " + shown(after) + " (" +
                   human_bytes(diff.after) + "), allocated memory as dumped";
      left_out = report::write_flame_svg(out, analysis::flame_tree(diff), o);
    } else {
      report::write_folded(out, diff);
    }
  });
  if (left_out && !quiet)
    std::cerr << "memsnap: note: " << count(left_out, "frame", "frames")
              << " narrower than 1 px left out of the flame graph (their bytes are in their callers)\n";
  if (!output.is_stdout())
    std::cerr << "wrote " << target << " (" << count(diff.stacks.size(), "stack", "stacks") << ", "
              << human_bytes(diff.before) << " -> " << human_bytes(diff.after) << " allocated)\n";
}

}  // namespace memsnap::app
