// `memsnap mcp`: a Model Context Protocol server on standard input and output, for AI assistants.
//
// The protocol (JSON-RPC 2.0, one message a line, MCP's stdio transport) runs in
// src/app/mcp_server.cpp; the tools it serves (analyze, diff, simulate, events, segments,
// flame, check) in src/app/mcp_tools.cpp, each answering with the JSON document the command
// writes for `--format json` (flame: its folded stacks), run in this process through the same
// app::run_* as the command line. A tool reads only the files named by --allow or under the
// directories it names (PathGuard), under the bounds the server was started with.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memsnap/app/load.hpp"

namespace memsnap::app {

/// The files and directories a tool may read (`memsnap mcp --allow PATH`, repeatable), each
/// resolved once at start: symbolic links followed, `.` and `..` gone.
class PathGuard {
 public:
  /// A Failure (exit 2) when an allowed path does not exist or cannot be resolved.
  explicit PathGuard(const std::vector<std::string>& allowed);
  /// `path` resolved (symbolic links and `..`, relative to the working directory) when it is a
  /// regular file that is one of the allowed files or lies under an allowed directory; else a
  /// Failure whose message names the path and says which: outside the allowed paths (also when a
  /// link inside leads out), no such file, or not a regular file ("-", stdin, is refused: it is
  /// the protocol's).
  std::string check(const std::string& path) const;
  /// The allowed paths as resolved, for messages.
  std::string describe() const;

 private:
  struct Root {
    std::string path;  // resolved, no trailing '/'
    bool directory = false;
  };
  bool inside(const std::string& resolved) const;
  std::vector<Root> roots_;
};

/// The longest request line read (a longer one is refused with a JSON-RPC error, unread).
inline constexpr size_t kMcpMaxRequestBytes = size_t{1} << 20;
/// The largest tool result sent, by default (`--max-output` sets it).
inline constexpr const char* kMcpDefaultMaxOutput = "64MiB";

struct McpRequest {
  std::vector<std::string> allow;              // --allow, at least one
  std::string max_memory = kDefaultMaxMemory;  // every load's bound
  std::string max_output = kMcpDefaultMaxOutput;
};
/// Serves until standard input ends (every request read by then is answered) or the client
/// goes away. Only protocol messages reach standard output: descriptor 1 is kept for them and
/// then pointed at standard error, so any other write lands there. Returns when done.
void run_mcp(const McpRequest& request);

}  // namespace memsnap::app
