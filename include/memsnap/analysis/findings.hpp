// Findings: what an analysis concluded, in plain words, with the fix.
#pragma once

#include <string>
#include <vector>

namespace memsnap::analysis {

enum class Severity { Info, Warning, Critical };
const char* to_string(Severity s);

/// One conclusion. `kind` is a stable identifier scripts can match on
/// ("stranded_free_memory", "leak_growth", "oom_fragmentation", ...);
/// `message` states the evidence in numbers; `advice` is the fix.
struct Finding {
  std::string kind;
  Severity severity = Severity::Info;
  std::string message;
  std::string advice;
};

}  // namespace memsnap::analysis
