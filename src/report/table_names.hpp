// File names in a table column (fleet, check): as short as they can be while still
// telling the files apart.
#pragma once

#include <string>
#include <vector>

namespace memsnap::report::detail {

/// Each path (escaped for the terminal) as its shortest suffix of whole components
/// that no other path of `paths` ends with: the base name alone when it is unique,
/// else with as many directories as tell it apart. A name still wider than `width`
/// columns is cut in the middle ("…"), where it is the same as its neighbours, so
/// the characters that differ stay: one cut when the head or the tail tells it
/// apart, else two around the part that does ("Wedsonlin…128_training…pickle").
/// Neighbours are the closest names in sorted order and in sorted order from the
/// end (O(n log n) for a fleet of thousands). Equal paths get equal names.
std::vector<std::string> table_names(const std::vector<std::string>& paths, size_t width);

}  // namespace memsnap::report::detail
