// Structural checks of a built snapshot: the accounting invariants the file should satisfy.
#pragma once

#include <string>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::snapshot {

/// Returns one message per violated invariant (blocks tile their segment,
/// stated segment totals match the blocks, segments do not overlap), at most
/// a few of each kind plus a count. An empty result means the file is consistent.
std::vector<std::string> validate(const Snapshot& s);

}  // namespace memsnap::snapshot
