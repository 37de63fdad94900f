// memsnap's entry point: parse the command line and run one command; app::report_failure
// words a failed command's error and gives its exit status.
#include <iostream>
#include <sstream>

#include "common.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/util/version.hpp"

namespace {

// --help in 80 columns: option descriptions wrapped under their column.
class WrappingFormatter : public CLI::Formatter {
 public:
  WrappingFormatter() { column_width(26); }
  std::string make_option_desc(const CLI::Option* opt) const override { return wrap(opt->get_description(), 80 - 26); }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(), wrap(sub->get_description(), 80 - 26), 26);
    return out.str();
  }
  // The description above the usage line and the footer, each line wrapped to 80 columns
  // (a command's one-line description ran to 203).
  std::string make_description(const CLI::App* app) const override {
    return wrap_lines(CLI::Formatter::make_description(app), 80);
  }
  std::string make_footer(const CLI::App* app) const override {
    return wrap_lines(CLI::Formatter::make_footer(app), 80);
  }

 private:
  static std::string wrap_lines(const std::string& text, size_t width) {
    std::string out, line;
    std::istringstream lines(text);
    while (std::getline(lines, line)) out += wrap(line, width) + "\n";
    return out;
  }
  static std::string wrap(const std::string& text, size_t width) {
    std::string out, line;
    std::istringstream words(text);
    std::string w;
    while (words >> w) {
      if (!line.empty() && line.size() + 1 + w.size() > width) {
        out += line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + w;
    }
    return out + line;
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace memsnap::cli;
  memsnap::io::CheckedStdout checked_stdout;  // every byte to stdout is checked (app::finish_stdout)
  CLI::App app{"memsnap: explain PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot)"};
  app.formatter(std::make_shared<WrappingFormatter>());
  app.set_version_flag("--version", std::string("memsnap ") + memsnap::kVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 success, 1 a check failed, 2 usage or input error, 3 internal error (a bug).\n"
      "Run 'memsnap COMMAND --help' for a command's options.");
  add_analyze(app);
  add_diff(app);
  add_segments(app);
  add_timeline(app);
  add_events(app);
  add_flame(app);
  add_callgraph(app);
  add_export(app);
  add_report(app);
  add_simulate(app);
  add_check(app);
  add_merge(app);
  add_mcp(app);
  add_completions(app);
  read_environment();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return memsnap::app::finish_stdout(checked_stdout, app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return memsnap::app::finish_stdout(checked_stdout, app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return memsnap::app::finish_stdout(checked_stdout, app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::cerr << "memsnap: " << e.what() << "\nRun 'memsnap --help' for usage.\n";
    return kBadInput;
  } catch (...) {
    return memsnap::app::report_failure();  // the command's own error, in one line
  }
  return memsnap::app::finish_stdout(checked_stdout, kOk);
}
