// `memsnap flame FILE`: live memory by full call stack, as folded stacks or an SVG flame graph.
#include <iostream>
#include <memory>

#include "common.hpp"
#include "flame_state.hpp"
#include "memsnap/analysis/stacks.hpp"
#include "memsnap/report/flame.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {

enum class FlameFormat { Folded, Svg };

struct FlameArgs {
  StackArgs stack;
  std::string output = "-";
  std::optional<FlameFormat> format;
  int width = 1200;
  bool script = false;
};

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

FlameFormat format_for(const std::optional<FlameFormat>& format, const std::string& output) {
  if (format) return *format;
  return ends_with_ci(output, ".svg") ? FlameFormat::Svg : FlameFormat::Folded;
}

std::string count(uint64_t n, const char* one, const char* many) {
  return with_commas(n) + " " + (n == 1 ? one : many);
}

}  // namespace

void add_flame(CLI::App& app) {
  auto args = std::make_shared<FlameArgs>();
  CLI::App* cmd = app.add_subcommand("flame", "Live memory by full call stack: folded stacks or an SVG flame graph");
  add_stack_options(*cmd, args->stack);
  cmd->add_option("-o,--output", args->output, "Output file: .svg for a flame graph, else folded stacks (default: -)")
      ->option_text("OUT");
  cmd->add_option("--format", args->format, "folded or svg (default: svg when OUT ends in .svg, else folded)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, FlameFormat>{{"folded", FlameFormat::Folded}, {"svg", FlameFormat::Svg}},
          CLI::ignore_case))
      ->option_text("FORMAT");
  cmd->add_option("--width", args->width, "SVG width in pixels (default 1200)")
      ->check(CLI::Range(400, 20000))
      ->option_text("W");
  cmd->add_flag("--js", args->script,
                "SVG: embed a small script for click-to-zoom (default: a static picture, no script)");
  cmd->callback([args] {
    FlameFormat format = format_for(args->format, args->output);
    io::OutputFile output = app::open_output(args->output, {args->stack.file});  // refused before the work
    LoadedStates ls = load_states(args->stack);
    app::bound_output(output, args->stack.max_output, ls.loaded.input.decoded_bytes);
    analysis::StackProfile profile = profile_of(ls.loaded.snapshot, ls.states, args->stack.stack);
    size_t left_out = 0;
    app::write_output(output, [&](std::ostream& out) {
      if (format == FlameFormat::Folded) {
        report::write_folded(out, profile);
        return;
      }
      report::FlameSvgOptions o;
      o.width = args->width;
      o.script = args->script;
      o.unit = args->stack.stack.state == analysis::StackState::All ? "in all blocks (reserved)"
                                                                    : analysis::to_string(args->stack.stack.state);
      o.subtitle_path = ls.source.path;
      o.subtitle = report::describe(ls.source) + ", " + human_bytes(profile.bytes) + " in " +
                   count(profile.blocks, "block", "blocks");
      left_out = report::write_flame_svg(out, analysis::flame_tree(profile), o);
    });
    if (left_out && !args->stack.quiet)
      std::cerr << "memsnap: note: " << count(left_out, "frame", "frames")
                << " narrower than 1 px left out of the flame graph (their bytes are in their callers)\n";
    if (!output.is_stdout())
      std::cerr << "wrote " << args->output << " (" << count(profile.stacks.size(), "stack", "stacks") << ", "
                << human_bytes(profile.bytes) << " " << analysis::to_string(args->stack.stack.state) << ")\n";
  });
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
  app::write_output(output, [&](std::ostream& out) {
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

}  // namespace memsnap::cli
