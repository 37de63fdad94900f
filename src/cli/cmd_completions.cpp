// `memsnap completions bash|zsh|fish` (hidden): the CLI definition itself walked into a plain spec
// of commands, options and choices; app/completions.hpp writes the scripts from it.
#include <memory>

#include "common.hpp"
#include "memsnap/app/completions.hpp"

namespace memsnap::cli {

namespace {

std::vector<std::string> choices_of(const std::string& text) {
  std::vector<std::string> out;
  if (text.find('|') == std::string::npos) return out;
  std::string cur;
  for (char c : text) {
    if (c == '|') {
      out.push_back(cur);
      cur.clear();
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
      cur += c;
    } else {
      return {};
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<app::CompletionOption> options_of(const CLI::App& app, bool* positionals) {
  std::vector<app::CompletionOption> out;
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional()) {
      if (positionals) *positionals = true;
      continue;
    }
    app::CompletionOption s;
    for (const auto& n : o->get_snames()) s.names.push_back("-" + n);
    for (const auto& n : o->get_lnames()) s.names.push_back("--" + n);
    s.description = o->get_description();
    s.takes_value = o->get_expected_max() > 0;  // flags expect 0 values
    s.choices = choices_of(o->get_option_text());
    for (const auto& n : o->get_lnames()) s.file_value = s.file_value || n == "output";
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<app::CompletionCommand> commands_of(const CLI::App& app) {
  std::vector<app::CompletionCommand> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
    app::CompletionCommand c;
    c.name = sub->get_name();
    c.description = sub->get_description();
    c.options = options_of(*sub, &c.takes_files);
    out.push_back(std::move(c));
  }
  return out;
}

struct CompletionArgs {
  std::string shell;
  std::string output = "-";
};

}  // namespace

void add_completions(CLI::App& app) {
  auto args = std::make_shared<CompletionArgs>();
  CLI::App* cmd = app.add_subcommand("completions", "Shell completion script for bash, zsh or fish, on stdout");
  cmd->group("");  // hidden: for packagers and the build, not listed in --help
  cmd->add_option("SHELL", args->shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->add_option("-o,--output", args->output, "Output file (default: - for stdout)")->option_text("OUT");
  CLI::App* root = &app;
  cmd->callback([args, root] {
    app::run_completions(args->shell, args->output, {commands_of(*root), options_of(*root, nullptr)});
  });
}

}  // namespace memsnap::cli
