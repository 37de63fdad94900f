// Printing `memsnap segments`: the segment map, one line per segment, worst fragmented first.
// (src/report/segments.cpp: the text; segments_json.cpp: the JSON.)
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

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
/// One file's segments document with a last "file" key, as write_files_json takes it.
std::string segments_json_document(const Source& src, const analysis::AnalyzeResult& result, size_t top,
                                   const std::string& file);
/// {schema_version, tool, files: [documents]}: several files' documents in one.
void write_files_json(std::ostream& out, const std::vector<std::string>& documents);

}  // namespace memsnap::report
