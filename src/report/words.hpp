// The words: what each finding, OOM cause, fix and iteration verdict says, in plain
// language with its numbers, shared by the text and JSON reporters (private to
// src/report). Strings from the snapshot appear raw here; text reporters pass the
// result through term() (JSON escapes by itself).
#pragma once

#include <string>
#include <vector>

#include "memsnap/analysis/analyze.hpp"

namespace memsnap::report::detail {

struct Words {
  std::string message;  // the evidence, in numbers
  std::string advice;   // the fix ("" when there is none)
};

Words finding_words(const analysis::Finding& f, const analysis::DeviceAnalysis& d,
                    const snapshot::AllocatorSettings& settings);

/// The findings about what memory is (words_roles.cpp): stale gradients, gradients never
/// zeroed, activations kept after the backward, a KV cache.
Words role_finding_words(const analysis::Finding& f, const analysis::DeviceAnalysis& d);

/// The line that opens a device (verdict.cpp): OOM or not, the peak, the device's size, the
/// worst finding.
std::string verdict_words(const analysis::DeviceAnalysis& d);

/// Why an OOM cause holds, in numbers.
std::string cause_evidence(analysis::OomCause cause, const analysis::OomReport& r,
                           const std::vector<analysis::Leak>& leaks);
/// One fix, in words.
std::string fix_words(analysis::OomFix fix, const analysis::OomReport& r);
/// A pasted OOM message against the report's state, a line per figure.
std::vector<std::string> message_check_words(const analysis::OomMessageCheck& c, const analysis::OomReport& r);
/// PyTorch's own error message, rebuilt from the figures ("?" where the file does not tell).
std::string torch_message(const analysis::OomReport& r);

/// "method" as the JSON has always spelled it: "annotation NAME", "marker NAME",
/// "repeating allocation sequence" (training loop), "repeated passes" (inference loop).
std::string iteration_method(const analysis::Iterations& it);
/// One line: how the iterations were found, or why none were.
std::string iteration_evidence(const analysis::Iterations& it);
/// Why the trace cannot show what came before its first event ("" when the file does not say).
std::string dropped_events_words(const analysis::TraceSummary& t, const snapshot::AllocatorSettings& settings);
/// "one forward pass, 24 repeated blocks of 52 allocations from model.py:253:forward: layers".
std::string structure_words(const analysis::Structure& s, const analysis::Iterations& it);
/// The structure's kind: "layers", "loop_within_step", "repeated_blocks".
std::string structure_kind(const analysis::Structure& s, const analysis::Iterations& it);

}  // namespace memsnap::report::detail
