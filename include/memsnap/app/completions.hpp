// Shell completion scripts (`memsnap completions bash|zsh|fish`): the commands and options as a
// plain spec, and the bash, zsh and fish scripts written from it. The CLI fills the spec by walking
// its own option definitions (src/cli/cmd_completions.cpp), so the scripts cannot drift from
// --help; nothing here knows the option parser.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace memsnap::app {

/// One option of a command (or of memsnap itself).
struct CompletionOption {
  std::vector<std::string> names;  // "-o", "--output"
  std::string description;
  bool takes_value = false;
  bool file_value = false;           // complete file names for its value
  std::vector<std::string> choices;  // "text", "json" (from "text|json")
};

/// One command: its name, its one-line description, its options.
struct CompletionCommand {
  std::string name, description;
  std::vector<CompletionOption> options;
  bool takes_files = false;  // has positionals (snapshot files)
};

/// What the scripts complete: the listed commands and the options before a command.
struct CompletionSpec {
  std::vector<CompletionCommand> commands;
  std::vector<CompletionOption> global;
};

/// The bash completion script (a `complete -F _memsnap memsnap` function).
void write_bash_completion(std::ostream& out, const CompletionSpec& spec);
/// The zsh completion script (`#compdef memsnap`, _arguments specs per command).
void write_zsh_completion(std::ostream& out, const CompletionSpec& spec);

/// The fish completion script (`complete -c memsnap` lines, options per command).
void write_fish_completion(std::ostream& out, const CompletionSpec& spec);

/// `memsnap completions SHELL -o OUTPUT`: the script for "bash", "zsh" or "fish" to OUTPUT
/// ("-": stdout).
void run_completions(const std::string& shell, const std::string& output, const CompletionSpec& spec);

}  // namespace memsnap::app
