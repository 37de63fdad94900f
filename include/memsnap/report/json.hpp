// How every JSON document memsnap prints is written: strings (values and keys) through the one
// UTF-8 validator (util/utf8.hpp), invalid bytes as U+FFFD, two-space indentation, a newline.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

namespace memsnap::report {

/// Writes `doc` and a newline to `out`; never fails on text from the input.
void write_json_document(std::ostream& out, const nlohmann::ordered_json& doc);

}  // namespace memsnap::report
