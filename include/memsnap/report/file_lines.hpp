// `analyze --file PATH` and `diff --file PATH`: one source file's memory by line, as text and JSON.
#pragma once

#include <ostream>

#include "memsnap/analysis/file_lines.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

/// The files matched, then per device a table: line, bytes live at the peak and at the dump,
/// allocated over the trace, the function; the file's total (each block once) last.
void write_file_lines_text(std::ostream& out, const Source& src, const analysis::FileLines& view,
                           const TextStyle& style);
/// One JSON document: input, file_query, matched_files, and per device its lines
/// (file, line, function, at_peak_bytes, at_dump_bytes, allocated_bytes and their block
/// counts) and total.
void write_file_lines_json(std::ostream& out, const Source& src, const analysis::FileLines& view);

/// The same for two snapshots, line by line: before, after and the change at the peak and at
/// the dump (text); every figure of both sides (JSON).
void write_diff_file_lines_text(std::ostream& out, const Source& before, const Source& after,
                                const analysis::FileLines& a, const analysis::FileLines& b, const TextStyle& style);
void write_diff_file_lines_json(std::ostream& out, const Source& before, const Source& after,
                                const analysis::FileLines& a, const analysis::FileLines& b);

}  // namespace memsnap::report
