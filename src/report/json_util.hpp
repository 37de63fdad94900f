// Helpers shared by the JSON reporters (private to src/report).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "memsnap/snapshot/input.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::report::detail {

using Json = nlohmann::ordered_json;

template <class T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

/// The `input` object: path, bytes, compression, pickle_protocol, form, ...
Json input_json(const snapshot::InputInfo& in, const snapshot::Snapshot& s);
/// Compact one-line output; invalid UTF-8 from the input is replaced, never fatal.
void write_json(std::ostream& out, const Json& doc);

}  // namespace memsnap::report::detail
