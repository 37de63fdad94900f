// Names of finding severities (as they appear in JSON and text).
#include "memsnap/analysis/findings.hpp"

namespace memsnap::analysis {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "?";
}

}  // namespace memsnap::analysis
