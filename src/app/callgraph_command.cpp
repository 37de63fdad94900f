// `memsnap callgraph FILE`: the call graph of live memory and its dominator tree (who retains what).
#include "memsnap/analysis/callgraph.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/report/callgraph.hpp"

namespace memsnap::app {

namespace {

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

void run_callgraph(const CallgraphRequest& request, int width) {
  double min_share = parse_share(request.min_share);
  if (request.dot && request.format == Format::Json) throw Failure("--dot and --format json: choose one", kBadInput);
  io::OutputFile output = open_output("-", {request.stack.file});
  LoadedStates ls = load_states(request.stack);
  bound_output(output, request.stack.max_output, ls.loaded.input.decoded_bytes);
  analysis::StackOptions options = request.stack.stack;
  options.collapse_dispatch = !request.dispatch;
  analysis::CallGraph graph = analysis::build_call_graph(profile_of(ls.loaded.snapshot, ls.states, options));
  report::CallgraphView view{&graph, &ls.source, min_share};
  write_output(output, [&](std::ostream& out) {
    if (request.dot)
      report::write_callgraph_dot(out, view);
    else if (request.format == Format::Json)
      report::write_callgraph_json(out, view);
    else
      report::write_callgraph_text(out, view, width);
  });
}

}  // namespace memsnap::app
