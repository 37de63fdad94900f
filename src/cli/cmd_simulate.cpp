// `memsnap simulate FILE`: its options; app::run_simulate does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/simulate_command.hpp"

namespace memsnap::cli {

void add_simulate(CLI::App& app) {
  auto args = std::make_shared<app::SimulateRequest>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Run the recorded allocations through a model of the caching allocator under other settings or another "
      "device size: would expandable_segments, another max_split_size_mb or a smaller card have run this job");
  add_file_option(*cmd, args->file);
  add_common_options(*cmd, args->common);
  cmd->add_option("--device", args->device, "The device to simulate (default: the first OOM, else the largest)")
      ->option_text("N");
  cmd->add_option("--set", args->sets,
                  "One more run with this PYTORCH_CUDA_ALLOC_CONF setting (repeatable; commas join several): "
                  "expandable_segments:True, max_split_size_mb:N, roundup_power2_divisions:N, "
                  "garbage_collection_threshold:F")
      ->option_text("KEY:VALUE");
  cmd->add_option("--capacity", args->capacity,
                  "Device memory the allocator may use, e.g. 40GB or 38GiB (default: the recorded device, "
                  "from the OOM; no limit when the trace has none)")
      ->option_text("SIZE");
  cmd->add_flag("--min-capacity", args->min_capacity,
                "Find by bisection the smallest device (2 MiB steps) on which each run would not fail");
  cmd->add_option("--scale", args->scales,
                  "What if every block of ROLE were F times as large (repeatable): its traced allocations and "
                  "its blocks alive when the window opens, e.g. activation:0.5 (about half the micro-batch), "
                  "optimizer_state:0.125 (sharded over 8 ranks), parameter:0.5 (bf16 weights); an estimate: "
                  "one run of its own, and applied in every --set run")
      ->option_text("ROLE:F");
  cmd->add_option("--drop", args->drops,
                  "What if the blocks of ROLE were never allocated (repeatable): their allocations and frees "
                  "vanish; an estimate, like --scale")
      ->option_text("ROLE");
  cmd->add_option("--role", args->roles,
                  "A role of your own for --scale/--drop: blocks whose allocation stack has a frame matching "
                  "GLOB (file:line:function, the file, or the function) are NAME (repeatable; first match wins)")
      ->option_text("NAME=GLOB");
  cmd->callback([args] { app::run_simulate(*args, text_style(args->common)); });
}

}  // namespace memsnap::cli
