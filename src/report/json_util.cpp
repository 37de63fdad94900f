// Shared JSON pieces: the input description and safe serialisation.
#include "json_util.hpp"

namespace memsnap::report::detail {

Json input_json(const snapshot::InputInfo& in, const snapshot::Snapshot& s) {
  Json j;
  j["path"] = in.path;
  j["bytes"] = in.bytes;
  j["compression"] = io::to_string(in.compression);
  j["pickle_protocol"] = in.pickle_protocol >= 0 ? Json(in.pickle_protocol) : Json(nullptr);
  j["form"] = snapshot::to_string(s.form);
  j["encoding"] = io::to_string(in.encoding);
  j["decoded_bytes"] = in.decoded_bytes;
  j["legacy_history"] = s.legacy_history;
  return j;
}

void write_json(std::ostream& out, const Json& doc) {
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace memsnap::report::detail
