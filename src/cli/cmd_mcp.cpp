// `memsnap mcp --allow PATH...`: its options; app::run_mcp serves the protocol.
#include <memory>

#include "common.hpp"
#include "memsnap/app/mcp_command.hpp"

namespace memsnap::cli {

void add_mcp(CLI::App& app) {
  auto args = std::make_shared<app::McpRequest>();
  CLI::App* cmd = app.add_subcommand(
      "mcp",
      "A Model Context Protocol server on stdin/stdout for AI assistants (Claude Code, Cursor, VS Code): "
      "analyze, diff, simulate, events, segments, flame and check as tools");
  cmd->add_option("--allow", args->allow,
                  "A snapshot file the tools may read, or a directory whose files (at any depth) they may read "
                  "(repeatable; at least one). A path is resolved (symbolic links, ..) before it is checked; any "
                  "other path is refused")
      ->option_text("PATH")
      ->required();
  add_max_memory_option(*cmd, args->max_memory);
  cmd->add_option("--max-output", args->max_output,
                  std::string("The largest result a tool sends (default ") + app::kMcpDefaultMaxOutput +
                      "); a larger one is an error")
      ->option_text("SIZE");
  cmd->footer(
      "Register it with an assistant, e.g. Claude Code:\n"
      "  claude mcp add memsnap -- memsnap mcp --allow /path/to/snapshots\n"
      "Standard output carries protocol messages only; diagnostics go to stderr.");
  cmd->callback([args] { app::run_mcp(*args); });
}

}  // namespace memsnap::cli
