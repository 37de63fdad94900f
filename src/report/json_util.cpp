// Shared JSON pieces: the input description and safe serialisation.
#include "json_util.hpp"

#include <vector>

#include "memsnap/util/utf8.hpp"

namespace memsnap::report::detail {

void add_site_context(Json& doc, const analysis::Sites& sites, const analysis::Sites* more) {
  if (doc.is_array()) {
    for (auto& e : doc) add_site_context(e, sites, more);
    return;
  }
  if (!doc.is_object()) return;
  for (auto& [key, value] : doc.items())
    if (value.is_structured()) add_site_context(value, sites, more);
  auto it = doc.find("site");
  if (it == doc.end() || !it->is_string() || doc.contains("user_site")) return;
  const std::string& name = it->get_ref<const std::string&>();
  const analysis::Sites* from = &sites;
  auto id = sites.find(name);
  if (!id && more) {
    id = more->find(name);
    from = more;
  }
  doc["user_site"] = id && from->is_user(*id) ? Json(name) : Json(nullptr);
  doc["library_context"] = id && !from->context(*id).empty() ? Json(from->context(*id)) : Json(nullptr);
}

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

namespace {

bool all_valid(const Json& doc) {
  // An explicit stack: a document's depth is memsnap's own, but no recursion costs nothing.
  std::vector<const Json*> todo{&doc};
  while (!todo.empty()) {
    const Json* j = todo.back();
    todo.pop_back();
    if (j->is_string()) {
      if (!utf8::valid(j->get_ref<const std::string&>())) return false;
    } else if (j->is_object()) {
      for (auto it = j->begin(); it != j->end(); ++it) {
        if (!utf8::valid(it.key())) return false;
        todo.push_back(&it.value());
      }
    } else if (j->is_array()) {
      for (const auto& v : *j) todo.push_back(&v);
    }
  }
  return true;
}

// A copy of `doc` with every string and key through utf8::sanitized (only when one needs it).
Json sanitized(const Json& doc) {
  if (doc.is_string()) return utf8::sanitized(doc.get_ref<const std::string&>());
  if (doc.is_object()) {
    Json out = Json::object();
    for (auto it = doc.begin(); it != doc.end(); ++it) out[utf8::sanitized(it.key())] = sanitized(it.value());
    return out;
  }
  if (doc.is_array()) {
    Json out = Json::array();
    for (const auto& v : doc) out.push_back(sanitized(v));
    return out;
  }
  return doc;
}

}  // namespace

std::string dump(const Json& doc, int indent) {
  // The one validator decides what is text (util/utf8.hpp); nlohmann's own check then finds
  // nothing to replace.
  if (all_valid(doc)) return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  return sanitized(doc).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_json(std::ostream& out, const Json& doc) {
  out << dump(doc) << '\n';
}

}  // namespace memsnap::report::detail
