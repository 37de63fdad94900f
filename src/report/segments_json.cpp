// `memsnap segments --format json`: the shown segments with their accounting and blocks.
#include <ostream>

#include "memsnap/report/segments.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"

namespace memsnap::report {

namespace {

detail::Json segments_doc(const Source& src, const analysis::AnalyzeResult& result, size_t top) {
  using detail::Json;
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["input"] = detail::input_json(src.input, src.context.snap);
  doc["allocator_settings"] = detail::settings_json(src.context.snap.settings);
  doc["order"] = "stranded_bytes descending, then fragmentation descending, then free_bytes descending, then address";
  Json devices = Json::array();
  for (const auto& da : result.devices) {
    const snapshot::Device& d = da.state();
    const analysis::Accounting& f = da.accounting;
    const std::vector<uint32_t>& order = da.segment_order;
    size_t shown = top == 0 ? order.size() : std::min(top, order.size());
    Json segs = Json::array();
    for (size_t i = 0; i < shown; ++i) {
      const snapshot::Segment& s = d.segments[order[i]];
      const analysis::SegmentAccount& sf = f.segments[order[i]];
      Json blocks = Json::array();
      for (const auto& b : d.blocks_of(s)) {
        Json jb = {{"address", b.address}, {"size_bytes", b.size}, {"state", snapshot::to_string(b.state)}};
        if (b.is_active()) {
          jb["requested_bytes"] = b.requested_size;
          jb["site"] = src.context.sites.site(b.stack);
        }
        blocks.push_back(std::move(jb));
      }
      segs.push_back({{"address", s.address},
                      {"pool", snapshot::to_string(s.pool)},
                      {"pool_id", Json::array({s.pool_id[0], s.pool_id[1]})},
                      {"stream", s.stream},
                      {"expandable", s.expandable},
                      {"size_bytes", s.total_size},
                      {"requested_bytes", sf.requested_bytes},
                      {"internal_free_bytes", sf.internal_free_bytes},
                      {"pending_free_bytes", sf.pending_free_bytes},
                      {"free_bytes", sf.external_free_bytes},
                      {"releasable_bytes", sf.releasable_bytes},
                      {"stranded_bytes", sf.stranded_bytes},
                      {"private_held_bytes", sf.private_held_bytes},
                      {"largest_free_block_bytes", sf.largest_free_block_bytes},
                      {"fragmentation", sf.fragmentation},
                      {"blocks", std::move(blocks)}});
    }
    devices.push_back({{"device", d.index},
                       {"regime", analysis::to_string(f.regime)},
                       {"segments_total", order.size()},
                       {"segments_shown", shown},
                       {"segments", std::move(segs)}});
    if (da.at) devices.back()["at"] = detail::at_json(*da.at);
  }
  doc["devices"] = std::move(devices);
  Json warnings = Json::array();
  for (const auto& w : src.context.snap.warnings) warnings.push_back(w);
  for (const auto& w : result.warnings) warnings.push_back(w);
  doc["warnings"] = std::move(warnings);
  detail::add_site_context(doc, src.context.sites);
  return doc;
}

}  // namespace

void write_segments_json(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result, size_t top) {
  detail::write_json(out, segments_doc(src, result, top));
}

std::string segments_json_document(const Source& src, const analysis::AnalyzeResult& result, size_t top,
                                   const std::string& file) {
  detail::Json doc = segments_doc(src, result, top);
  doc["file"] = file;
  return detail::dump(doc);
}

void write_files_json(std::ostream& out, const std::vector<std::string>& documents) {
  detail::Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["files"] = detail::Json::array();
  std::string head = detail::dump(doc);  // ..."files": []\n}
  head.erase(head.rfind(']'));
  out << head;
  for (size_t i = 0; i < documents.size(); ++i) {
    out << (i ? ",\n    " : "\n    ");
    for (char c : documents[i]) {
      out << c;
      if (c == '\n') out << "    ";
    }
  }
  out << (documents.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace memsnap::report
