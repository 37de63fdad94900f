// `memsnap analyze FILE...`: its options; app::run_analyze does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/analyze_command.hpp"

namespace memsnap::cli {

namespace {

void add_fits_options(CLI::App& cmd, app::FitsOptions& o) {
  // Values are checked as soon as they are parsed, before the snapshot is loaded.
  cmd.add_option("--fits", o.size,
                 "Would a request of SIZE (e.g. 1.5GiB) be served from the cache, or need cudaMalloc?")
      ->option_text("SIZE")
      ->each([](const std::string& v) { app::fits_bytes(v); });
  cmd.add_option("--stream", o.stream, "Stream of the --fits request: decimal or 0x hex (default 0)")
      ->option_text("S")
      ->each([](const std::string& v) { app::stream_value(v); });
  cmd.parse_complete_callback([&o] {
    if (!o.stream.empty() && o.size.empty()) throw Failure("--stream applies only with --fits SIZE", kBadInput);
  });
}

}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<app::AnalyzeRequest>();
  CLI::App* cmd = app.add_subcommand("analyze", "Where the GPU memory went: totals, free memory, peak, leaks, OOMs");
  add_files_option(*cmd, args->files);
  add_common_options(*cmd, args->common, true, true);
  add_jobs_option(*cmd, args->jobs);
  cmd->add_flag("--all", args->all,
                "With several files: every file's full report after the fleet summary, not only the worst one's");
  add_state_options(*cmd, args->state);
  cmd->add_option("--iteration-marker", args->iteration_marker,
                  "Where iterations start: a record_function annotation name, a site (train.py:110) whose "
                  "every allocation opens one, or a function name (default: Optimizer.step annotations, else "
                  "a repeating step with backward and optimizer work, or whole repeated passes)")
      ->option_text("NAME");
  cmd->add_option("--capacity", args->capacity,
                  "The GPU's total memory (e.g. 80GiB): the verdict judges the headroom against it, and the OOM "
                  "analysis tells memory held outside PyTorch's allocator")
      ->option_text("SIZE");
  cmd->add_option("--oom-size", args->oom_size,
                  "Explain an OOM the trace does not hold, using the dumped state: the \"Tried to allocate\" "
                  "size from the error message")
      ->option_text("SIZE");
  cmd->add_option("--oom-message", args->oom_message,
                  "PyTorch's \"CUDA out of memory\" message (or @FILE holding it): checked against the OOM "
                  "the file holds, or, without one, explained from the dumped state as --oom-size; its "
                  "capacity and free memory show memory outside the snapshot")
      ->option_text("TEXT");
  add_fits_options(*cmd, args->fits);
  cmd->add_option("--role", args->roles,
                  "A role of your own: blocks whose allocation stack has a frame matching GLOB "
                  "(file:line:function, the file, or the function) are NAME (repeatable; first match wins, "
                  "before the built-in roles)")
      ->option_text("NAME=GLOB");
  cmd->add_option("--phases", args->phases,
                  "Where the phase of the peak and each OOM comes from: memsnap (the default: forward, backward, "
                  "optimizer step... from stacks and PyTorch's own annotations) or annotations (your own "
                  "record_function ranges: the innermost one open at the event; torch.compile's are named "
                  "torch.compile autotuning)")
      ->check(CLI::IsMember({"memsnap", "annotations"}))
      ->option_text("memsnap|annotations");
  cmd->add_option("--file", args->file_view,
                  "One source file's memory by line instead of the report: live at the peak, at the dump, and "
                  "allocated over the trace; PATH matches a frame's file by its last components (model.py, "
                  "src/model.py)")
      ->option_text("PATH");
  auto verbose = std::make_shared<bool>(false);
  cmd->add_flag("-v,--verbose", *verbose,
                "The cache's state in full (free memory by cause, pools, pinning sites) and its information-only "
                "findings, also on a device that never came near running out of memory (they are shown anyway "
                "when it did)");
  cmd->callback([args, verbose] {
    report::TextStyle style = text_style(args->common);
    style.verbose = *verbose;
    app::run_analyze(*args, style);
  });
}

}  // namespace memsnap::cli
