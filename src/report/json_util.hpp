// Helpers shared by the JSON reporters (private to src/report).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::report::detail {

using Json = nlohmann::ordered_json;

template <class T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

/// The `input` object: path, bytes, compression, pickle_protocol, form, ...
Json input_json(const snapshot::InputInfo& in, const snapshot::Snapshot& s);
/// The whole `analyze --format json` document.
Json analyze_json(const Source& src, const analysis::AnalyzeResult& result);
/// Beside every "site" string of `doc` (at any depth): "user_site", the site when it is a
/// frame of the user's code (else null), and "library_context", the library call its
/// memory went through (Sites::context; null when none). `more` is a second snapshot's
/// sites, asked when `sites` does not know the name (diff).
void add_site_context(Json& doc, const analysis::Sites& sites, const analysis::Sites* more = nullptr);
/// `doc` as JSON text: indented by 2 (write_json's layout) or, with indent -1, on one line;
/// invalid UTF-8 from the input is replaced, never fatal.
std::string dump(const Json& doc, int indent = 2);
/// `doc` indented by 2 and a newline; invalid UTF-8 from the input is replaced, never fatal.
void write_json(std::ostream& out, const Json& doc);

}  // namespace memsnap::report::detail
