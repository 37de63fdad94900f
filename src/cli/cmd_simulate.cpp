// `memsnap simulate FILE`: the recorded requests under other allocator settings or another device size.
#include <iostream>
#include <memory>

#include "common.hpp"
#include "memsnap/analysis/simulate.hpp"
#include "memsnap/report/simulate.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {
struct SimulateArgs {
  std::string file;
  CommonOptions common;
  std::optional<int> device;
  std::vector<std::string> sets;
  std::string capacity;
  bool min_capacity = false;
};

// The device to simulate: --device, else the first that ran out of memory, else the one that
// reserved the most.
const snapshot::Device& pick_device(const snapshot::Snapshot& snap, std::optional<int> device) {
  if (device) {
    const snapshot::Device* d = snap.device(*device);
    if (!d) throw Failure("--device " + std::to_string(*device) + ": the snapshot has no such device", kBadInput);
    return *d;
  }
  const snapshot::Device* best = nullptr;
  uint64_t best_reserved = 0;
  for (const auto& d : snap.devices) {
    if (d.trace.empty()) continue;
    for (size_t i = 0; i < d.trace.size(); ++i)
      if (d.trace.action_at(i) == snapshot::Action::Oom) return d;
    uint64_t reserved = 0;
    for (const auto& s : d.segments) reserved += s.total_size;
    if (!best || reserved > best_reserved) best = &d, best_reserved = reserved;
  }
  if (!best) throw Failure("the snapshot has no trace to simulate (record it with _record_memory_history)", kBadInput);
  return *best;
}
}  // namespace

void add_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
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
  cmd->callback([args] {
    analysis::SimulateOptions options;
    options.sets = args->sets;
    options.min_capacity = args->min_capacity;
    if (!args->capacity.empty()) {
      auto v = parse_size(args->capacity);
      if (!v || *v == 0 || *v > (uint64_t{1} << 50))
        throw Failure("--capacity: not a device size: '" + args->capacity + "' (e.g. 40GB, 38GiB)", kBadInput);
      options.capacity = v;
    }
    io::OutputFile output = app::open_output("-", {args->file});
    snapshot::Loaded loaded = load(args->file, args->common);
    print_warnings(loaded);
    const auto& snap = loaded.snapshot;
    const snapshot::Device& d = pick_device(snap, args->device);
    if (d.trace.empty()) throw Failure("device " + std::to_string(d.index) + " has no trace to simulate", kBadInput);
    analysis::Context ctx(snap, code_rules());
    analysis::Replay replay(ctx, d);
    analysis::Simulation sim = analysis::simulate(ctx, replay, options);  // UsageError: exit 2
    report::Source src{loaded.input, ctx};
    app::write_output(output, [&](std::ostream& out) {
      if (args->common.format == Format::Json)
        report::write_simulate_json(out, src, sim);
      else
        report::write_simulate_text(out, src, sim, text_style(args->common));
    });
  });
}

}  // namespace memsnap::cli
