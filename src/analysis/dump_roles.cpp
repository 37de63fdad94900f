// Each dumped block's role and the phase of its alloc (dump_roles.hpp).
#include "memsnap/analysis/dump_roles.hpp"

#include "memsnap/analysis/phases.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/util/flat_map.hpp"

namespace memsnap::analysis {

DumpRoles dump_roles(const Context& ctx, const snapshot::Device& d, const RoleRules& rules) {
  RoleTable table(ctx, rules);
  DumpRoles out;
  out.names = table.names();
  out.role.assign(d.blocks.size(), DumpRoles::kNone);
  out.phase.assign(d.blocks.size(), DumpRoles::kNone);
  if (d.trace.empty()) {  // the dump alone: what each block's stack says, as analyze counts it
    for (size_t k = 0; k < d.blocks.size(); ++k)
      if (d.blocks[k].is_active()) out.role[k] = table.stack_role(d.blocks[k].stack);
    return out;
  }
  const Replay replay(ctx, d);
  const Phases phases(ctx, table.stacks(), d, &replay);
  const BlockRoles roles(table, replay, phases);
  // The ranges still active after the last event, by address: the dumped blocks.
  FlatMap64<uint32_t> at_end;
  const uint32_t n = static_cast<uint32_t>(replay.ranges().size());
  for (uint32_t id = 0; id < n; ++id) {
    const LiveRange r = replay.range(id);
    if (r.end == kNever) {
      if (auto [slot, added] = at_end.try_emplace(r.addr, id); !added) *slot = id;  // the later one
    }
  }
  for (size_t k = 0; k < d.blocks.size(); ++k) {
    const snapshot::Block& b = d.blocks[k];
    if (!b.is_active()) continue;
    const uint32_t* id = at_end.find(b.address);
    if (!id) {  // a block the replay does not hold (an inconsistent trace): analyze counts it as unknown
      out.role[k] = RoleId(Role::Unknown);
      continue;
    }
    out.role[k] = roles.of(*id);
    if (const uint32_t begin = replay.begin_of(*id); begin != kWindowStart && begin < phases.size())
      out.phase[k] = static_cast<uint8_t>(phases.at(begin));
  }
  return out;
}

}  // namespace memsnap::analysis
