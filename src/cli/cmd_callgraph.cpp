// `memsnap callgraph FILE`: the call graph of live memory and its dominator tree (who retains what).
#include <memory>

#include "common.hpp"
#include "memsnap/app/stacks.hpp"

namespace memsnap::cli {

void add_callgraph(CLI::App& app) {
  auto args = std::make_shared<app::CallgraphRequest>();
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
  cmd->callback([args] { app::run_callgraph(*args, text_style(CommonOptions{}).width); });
}

}  // namespace memsnap::cli
