// The report page's script and style sheet (src/report/html/), embedded at build time with
// their SHA-256 in hex, which the page's Content-Security-Policy names (private to src/report).
#pragma once

namespace memsnap::report::detail {

extern const char kReportJs[];
extern const char kReportCss[];
extern const char kReportJsSha256[];   // hex, of kReportJs's bytes
extern const char kReportCssSha256[];  // hex, of kReportCss's bytes

}  // namespace memsnap::report::detail
