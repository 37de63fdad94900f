// `memsnap report FILE... -o report.html`: one self-contained HTML page, offline.
//
// The page carries what memsnap computed, never the snapshot: per file, the whole
// `analyze --format json` document (the verdict is drawn from it, so its numbers are
// those of `analyze` and findings added to the analysis appear without a change here),
// and per device the analysis' page data (analysis/page.hpp): the timeline's kept
// points with the event behind each, the states at the recorded moments with their
// segment maps, blocks and sites, and flame trees. With two files, the `diff --format
// json` document too. Stacks are shared: one table of frames ("file:line:function" as
// `analyze` names them, with their kind) and one of stack suffixes (frame, parent), so
// a stack is one index.
//
// Safety. The data is one JSON text inside <script type="application/json">, with
// every '<', '>' and '&' and U+2028/U+2029 written as \u escapes (script_safe_json,
// escape.hpp), so no string of the snapshot can end the element or start markup; the page's script reads it with
// JSON.parse and puts text into the document only as text (textContent), never as
// markup. Invalid UTF-8 is replaced. The page's one script and one style sheet are
// inline and hand-written (src/report/html/), and a Content-Security-Policy meta tag
// allows exactly those two (by their SHA-256) and nothing else: no network, no other
// script, no frame, no form.
#pragma once

#include <ostream>
#include <vector>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/diff.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

struct HtmlFile {
  Source source;
  const analysis::AnalyzeResult* result = nullptr;  // analysed with AnalyzeOptions::page and ::timeline
};

struct HtmlView {
  std::vector<HtmlFile> files;                              // one, or two for a diff
  const std::vector<analysis::DeviceDiff>* diff = nullptr;  // two files: files[0] -> files[1]
};

/// The page; its escaping is escape.hpp's (html_escape for the title, script_safe_json for the data).
void write_report_html(std::ostream& out, const HtmlView& view);

}  // namespace memsnap::report
