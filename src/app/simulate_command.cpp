// `memsnap simulate FILE`: the recorded requests under other allocator settings or another device size.
#include "memsnap/app/simulate_command.hpp"

#include <cctype>
#include <iostream>

#include "memsnap/analysis/simulate.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/report/simulate.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

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

void run_simulate(const SimulateRequest& request, const report::TextStyle& style, std::ostream* into) {
  analysis::SimulateOptions options;
  options.sets = request.sets;
  options.min_capacity = request.min_capacity;
  // Bad values are one-line usage errors (exit 2) before the file is read; role names are
  // checked against the file's roles.
  for (const auto& r : request.roles) options.roles.user.push_back(analysis::parse_role_rule(r));
  for (const auto& v : request.scales) options.role_edits.push_back(analysis::parse_role_scale(v));
  for (const auto& v : request.drops) options.role_edits.push_back(analysis::parse_role_drop(v));
  if (!request.capacity.empty()) {
    auto v = parse_size(request.capacity);
    if (!v || *v == 0 || *v > (uint64_t{1} << 50))
      throw Failure("--capacity: not a device size: '" + request.capacity + "' (e.g. 40GB, 38GiB)", kBadInput);
    options.capacity = v;
    // 40GB is 40 × 10^9 bytes (37.25 GiB), 40G and 40GiB are 40 GiB: a "40 GB" card has 40 GiB.
    std::string number, unit;
    for (char c : request.capacity) {
      if (std::isalpha(static_cast<unsigned char>(c)))
        unit.push_back(char(std::tolower(static_cast<unsigned char>(c))));
      else if (unit.empty() && !std::isspace(static_cast<unsigned char>(c)))
        number.push_back(c);
    }
    if (unit == "kb" || unit == "mb" || unit == "gb" || unit == "tb") {
      const std::string prefix(1, char(std::toupper(static_cast<unsigned char>(unit[0]))));
      options.capacity_note = number + prefix + "B: decimal units; a card sold as " + number + " " + prefix + "B has " +
                              number + prefix + "iB";
    }
  }
  io::OutputFile output = open_results(into, {request.file});
  snapshot::Loaded loaded = load(request.file, request.common);
  print_warnings(loaded);
  const auto& snap = loaded.snapshot;
  const snapshot::Device& d = pick_device(snap, request.device);
  if (d.trace.empty()) throw Failure("device " + std::to_string(d.index) + " has no trace to simulate", kBadInput);
  analysis::Context ctx(snap, code_rules());
  analysis::Replay replay(ctx, d);
  analysis::Simulation sim = analysis::simulate(ctx, replay, options);  // UsageError: exit 2
  report::Source src{loaded.input, ctx};
  write_output(output, [&](std::ostream& out) {
    if (request.common.format == Format::Json)
      report::write_simulate_json(out, src, sim);
    else
      report::write_simulate_text(out, src, sim, style);
  });
}

}  // namespace memsnap::app
