// Each dumped block's role, for `export`: the role analyze's totals.by_role counts it under
// (roles.hpp: with a trace, the role of the replayed range live at the dump at the block's
// address; without one, what its stack says), and the phase its alloc ran in when the trace
// holds that alloc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/roles.hpp"

namespace memsnap::analysis {

struct DumpRoles {
  static constexpr uint8_t kNone = 0xFF;
  std::vector<std::string> names;  // by role id
  std::vector<uint8_t> role;       // per block of the device (its `blocks` order): a RoleId; kNone for a free block
  std::vector<uint8_t> phase;      // per block: the Phase its alloc ran in; kNone when the trace does not hold it
};

/// The roles of device d's dumped blocks (a replay of its trace when it has one).
DumpRoles dump_roles(const Context& ctx, const snapshot::Device& d, const RoleRules& rules);

}  // namespace memsnap::analysis
