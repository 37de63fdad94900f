// Printing `memsnap segments`: the segment map, one line per segment, worst fragmented first.
#pragma once

#include <cstddef>
#include <ostream>

#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

/// One line per segment (address, pool, stream, size, free, and a bar of the
/// terminal's width with the blocks to scale: '#' allocated, '+' pending free,
/// '.' free; every live block gets at least one cell), then how many were omitted.
/// `top`: segments shown per device, 0 for all.
void write_segments_text(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result, size_t top,
                         const TextStyle& style);
/// One JSON document (schema_version 1): the shown segments with their blocks.
void write_segments_json(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result, size_t top);

}  // namespace memsnap::report
