// `memsnap check FILE... --max-peak 40GiB ...`: its options; app::run_check does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/check_command.hpp"

namespace memsnap::cli {

namespace {

// The limits: the size options, --max-fragmentation, the two flags, --config and --junit.
void add_limit_options(CLI::App& cmd, app::CheckRequest& args) {
  auto size_opt = [&](const char* name, const char* what) {
    args.sizes[name] = "";
    cmd.add_option(std::string("--") + name, args.sizes[name], what)->option_text("SIZE");
  };
  size_opt("max-reserved", "Fail when memory reserved at the dump exceeds SIZE (e.g. 20GiB)");
  size_opt("max-allocated", "Fail when memory allocated at the dump exceeds SIZE");
  size_opt("max-peak",
           "Fail when the trace's peak of allocated memory exceeds SIZE (allocated at the dump without a trace; "
           "SKIP within SIZE when the trace's ring buffer dropped older events)");
  cmd.add_option("--max-fragmentation", args.max_fragmentation,
                 "Fail when a pool's fragmentation (1 - largest stranded piece / stranded bytes, as in analyze) "
                 "exceeds F, from 0 to 1")
      ->option_text("F");
  size_opt("max-stranded", "Fail when free memory stranded by live allocations exceeds SIZE");
  cmd.add_flag("--no-leaks", args.no_leaks,
               "Fail when a site leaks across iterations (SKIP with fewer than 5 iterations found)");
  cmd.add_flag("--no-oom", args.no_oom,
               "Fail when the snapshot records an out-of-memory event (SKIP on a device without a trace, or one whose "
               "ring buffer dropped older events)");
  size_opt("capacity",
           "The device's size (e.g. 80GiB, 24GB): adds the min-headroom check, failing when less than a tenth "
           "of it (or --min-headroom) is left above the trace's reserved peak");
  size_opt("min-headroom",
           "Fail when the device's size (--capacity, or an OOM message's) less the reserved peak is under SIZE "
           "(SKIP when the size is unknown)");
  cmd.add_option("--config", args.config,
                 "Limits from a JSON object whose keys are these options without dashes, e.g. "
                 "{\"max-reserved\": \"20GiB\", \"no-leaks\": true}; the command line overrides it")
      ->option_text("FILE");
  cmd.add_option("--junit", args.junit, "Also write the results as JUnit XML to FILE")->option_text("FILE");
}

}  // namespace

void add_check(CLI::App& app) {
  auto args = std::make_shared<app::CheckRequest>();
  CLI::App* cmd =
      app.add_subcommand("check", "Limits for CI: PASS/FAIL/SKIP per check, file and device; exit 1 on a failure");
  add_files_option(*cmd, args->files);
  add_limit_options(*cmd, *args);
  add_jobs_option(*cmd, args->jobs);
  add_common_options(*cmd, args->common, true, true);
  cmd->footer(
      "Exit status: 0 every check passed; 1 a check failed; 2 a usage error, or a file\n"
      "could not be read (the others are still checked and reported; an unreadable file\n"
      "outranks a failed check).");
  cmd->callback([args, cmd] {
    // A flag given counts, whatever value it was given.
    args->no_leaks = cmd->count("--no-leaks") > 0;
    args->no_oom = cmd->count("--no-oom") > 0;
    app::run_check(*args, text_style(args->common));
  });
}

}  // namespace memsnap::cli
