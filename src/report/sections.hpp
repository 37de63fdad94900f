// Section writers shared by the analyze reporters (private to src/report).
#pragma once

#include <ostream>

#include "json_util.hpp"
#include "memsnap/analysis/findings.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report::detail {

/// The trace part of a device block: span, replay, peak, iterations, leaks.
void write_trace_text(std::ostream& out, const analysis::DeviceTotals& t, const analysis::TraceAnalysis* trace,
                      const TextStyle& style);
/// Adds `trace` (extended), `peak`, `iterations`, `leaks` to a device object.
void add_trace_json(Json& device, const analysis::DeviceTotals& t, const analysis::TraceAnalysis* trace);
/// Findings as "[severity] message" with the advice beneath, wrapped to the width.
void write_findings_text(std::ostream& out, const std::vector<analysis::Finding>& findings, const TextStyle& style);
Json findings_json(const std::vector<analysis::Finding>& findings);
/// `oom` (the last, or null) and `ooms` (all) on a device object.
void add_oom_json(Json& device, const std::vector<analysis::OomReport>* ooms);
void write_oom_text(std::ostream& out, const std::vector<analysis::OomReport>* ooms,
                    const std::optional<int64_t>& first_time, const TextStyle& style);
Json site_bytes_json(const analysis::SiteBytes& s);

}  // namespace memsnap::report::detail
