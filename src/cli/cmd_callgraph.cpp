// `memsnap callgraph FILE`: the call graph of live memory and its dominator tree (who retains what).
#include <iostream>
#include <memory>

#include "common.hpp"
#include "flame_state.hpp"
#include "memsnap/analysis/callgraph.hpp"
#include "memsnap/report/callgraph.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {

struct CallgraphArgs {
  StackArgs stack;
  std::string min_share = "1%";
  bool dispatch = false;
  bool dot = false;
  Format format = Format::Text;
};

// "1%", "0.5%" or "2" (percent either way); Failure outside [0, 100].
double parse_share(const std::string& text) {
  std::string s = text;
  if (!s.empty() && s.back() == '%') s.pop_back();
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || !(v >= 0 && v <= 100))
    throw Failure("--min-share: expected a percentage from 0 to 100 (e.g. 1% or 0.5%), got '" + text + "'", kBadInput);
  return v / 100;
}

}  // namespace

void add_callgraph(CLI::App& app) {
  auto args = std::make_shared<CallgraphArgs>();
  CLI::App* cmd =
      app.add_subcommand("callgraph", "Call graph of live memory: self, total and retained bytes (dominators)");
  add_stack_options(*cmd, args->stack);
  cmd->add_flag("--dispatch", args->dispatch,
                "Keep dispatch frames (nn.Module._call_impl, the C++ dispatcher, at::/c10:: internals, the caching "
                "allocator); by default they are collapsed so retained bytes land on the functions that name a cause");
  cmd->add_flag("--by-function", args->stack.stack.by_function,
                "One vertex per function and file (default: per function, file and line)");
  cmd->add_option("--min-share", args->min_share,
                  "Text and DOT: leave out frames below this share of the bytes (default 1%)")
      ->option_text("PCT");
  cmd->add_flag("--dot", args->dot, "Write Graphviz DOT instead of text (render it: dot -Tsvg)");
  cmd->add_option("--format", args->format, "Output format: text (default) or json (every vertex, unpruned)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"text", Format::Text}, {"json", Format::Json}},
                                          CLI::ignore_case))
      ->option_text("text|json");
  cmd->callback([args] {
    double min_share = parse_share(args->min_share);
    if (args->dot && args->format == Format::Json) throw Failure("--dot and --format json: choose one", kBadInput);
    io::OutputFile output = app::open_output("-", {args->stack.file});
    LoadedStates ls = load_states(args->stack);
    app::bound_output(output, args->stack.max_output, ls.loaded.input.decoded_bytes);
    analysis::StackOptions options = args->stack.stack;
    options.collapse_dispatch = !args->dispatch;
    analysis::CallGraph graph = analysis::build_call_graph(profile_of(ls.loaded.snapshot, ls.states, options));
    report::CallgraphView view{&graph, &ls.source, min_share};
    app::write_output(output, [&](std::ostream& out) {
      if (args->dot)
        report::write_callgraph_dot(out, view);
      else if (args->format == Format::Json)
        report::write_callgraph_json(out, view);
      else
        report::write_callgraph_text(out, view, text_style(CommonOptions{}).width);
    });
  });
}

}  // namespace memsnap::cli
