// `memsnap callgraph`: the dominator tree as text, the pruned graph as Graphviz DOT, everything as JSON.
#include "memsnap/report/callgraph.hpp"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "frame_label.hpp"
#include "json_util.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

namespace {

using analysis::CallGraph;
using analysis::CallVertex;
using analysis::kNoVertex;
using analysis::ProfileFrameKind;

std::string share(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return buf;
}

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", fraction * 100);
  return buf;
}

// A frame is shown when the stacks through it reach the threshold: a caller that
// retains little alone (its callees are shared) still says where memory comes from.
bool kept(const CallVertex& v, const CallgraphView& view) {
  return double(v.total_bytes) >= view.min_share * double(view.graph->bytes) && v.total_bytes > 0;
}

// ---- text --------------------------------------------------------------------------------------

constexpr size_t kNum = 10;                                       // a byte column: "1023.99 MiB" is 11, rare
constexpr size_t kCols = kNum + 1 + 6 + 1 + kNum + 1 + kNum + 2;  // retained share total self, two spaces
constexpr size_t kMaxGuide = 15;                                  // deeper branch levels: "..." and the last four
constexpr size_t kMaxName = 64;                                   // a longer frame name is hostile or generated: cut

// human_bytes in at most kNum columns: "1002.25 MiB" becomes "1002.2 MiB".
std::string bytes_col(uint64_t n) {
  std::string s = human_bytes(n);
  if (s.size() > kNum) {
    size_t dot = s.find('.'), space = s.find(' ');
    if (dot != std::string::npos && space != std::string::npos && space > dot + 2) s.erase(dot + 2, space - dot - 2);
  }
  return detail::pad_left(s, kNum);
}

std::string columns(const CallVertex& v, uint64_t whole) {
  return bytes_col(v.retained_bytes) + " " + detail::pad_left(share(v.retained_bytes, whole), 6) + " " +
         bytes_col(v.total_bytes) + " " + bytes_col(v.self_bytes) + "  ";
}

// The guide columns of a line in at most `max` columns: the deepest levels stay, whole
// (three columns each), and "..." stands for the levels cut.
std::string clip_guide(const std::string& guide, size_t max = kMaxGuide) {
  if (guide.size() <= max) return guide;
  max = std::max<size_t>(max, 6);
  size_t keep = (max - 3) / 3 * 3;  // whole levels after the "..."
  return "..." + guide.substr(guide.size() - keep);
}

}  // namespace

void write_callgraph_text(std::ostream& out, const CallgraphView& view, int width) {
  const CallGraph& g = *view.graph;
  const size_t w = size_t(std::max(width, 60));
  const uint64_t whole = g.bytes;
  out << "memsnap " << kVersion << "  " << detail::printable(view.source->path, w - 16) << '\n';
  out << detail::wrap_block(describe(*view.source) + ": " + human_bytes(g.bytes) + " in " + with_commas(g.blocks) +
                                (g.blocks == 1 ? " block" : " blocks") + ", " + with_commas(g.frames.size()) +
                                (g.options.by_function ? " functions" : " frames"),
                            w, 0);
  out << detail::wrap_block(
      "retained: the memory that goes if the frame's call goes (every path to it passes through the frame); "
      "total: the memory of the stacks through the frame; self: allocated with the frame innermost. Each frame "
      "appears once, under the closest frame it cannot be reached without; * marks frames with several callers "
      "(their total includes memory another caller retains).",
      w, 0);
  out << "frames whose stacks hold less than " << percent_text(view.min_share) << " of " << human_bytes(whole)
      << " are summarised (--min-share)\n\n";
  out << detail::pad_left("retained", kNum) << ' ' << detail::pad_left("share", 6) << ' '
      << detail::pad_left("total", kNum) << ' ' << detail::pad_left("self", kNum) << "  frame\n";

  auto children = g.dominator_children();
  struct Item {
    uint32_t vertex;
    std::string guide, mark;  // guides of the branch levels above, and this line's own "|- " / "`- "
    uint64_t hidden_count = 0, hidden_bytes = 0;  // a summary line instead of a vertex when hidden_count > 0
  };
  std::vector<Item> todo{{0, "", "", 0, 0}};
  while (!todo.empty()) {
    Item it = std::move(todo.back());
    todo.pop_back();
    std::string lead = clip_guide(it.guide + it.mark);
    size_t room = w > kCols + detail::text_width(lead) ? w - kCols - detail::text_width(lead) : 12;
    if (it.hidden_count) {
      std::string text = "(" + with_commas(it.hidden_count) + (it.hidden_count == 1 ? " more frame" : " more frames") +
                         " below " + percent_text(view.min_share) + ")";
      if (detail::text_width(text) > room) text = "(" + with_commas(it.hidden_count) + " more)";
      if (detail::text_width(text) > room) lead = clip_guide(it.guide + it.mark, w - kCols - detail::text_width(text));
      out << bytes_col(it.hidden_bytes) << ' ' << detail::pad_left(share(it.hidden_bytes, whole), 6)
          << std::string(kNum * 2 + 4, ' ') << lead << text << '\n';
      continue;
    }
    const CallVertex& v = g.vertices[it.vertex];
    std::string name;
    if (it.vertex == 0)
      name = "all";
    else {
      bool several = v.callers > 1;
      name = (several ? "*" : "") + detail::fit_frame(g.frames[v.frame], room - (several ? 1 : 0), true);
    }
    // What still does not fit is cut with an ellipsis, so every line fits the terminal
    // (the JSON and DOT outputs keep the whole name).
    if (detail::text_width(name) > kMaxName) name = detail::printable(name, kMaxName);
    if (kCols + detail::text_width(lead) + detail::text_width(name) > w && w > kCols + detail::text_width(lead) + 8)
      name = detail::printable(name, w - kCols - detail::text_width(lead));
    out << columns(v, whole) << lead << name << '\n';

    std::vector<uint32_t> shown;
    uint64_t hidden = 0, hidden_bytes = 0;
    for (uint32_t c : children[it.vertex]) {
      if (kept(g.vertices[c], view))
        shown.push_back(c);
      else {
        ++hidden;
        hidden_bytes += g.vertices[c].retained_bytes;
      }
    }
    std::string guide = it.guide + (it.mark == "|- " ? "|  " : it.mark == "`- " ? "   " : "");
    size_t lines = shown.size() + (hidden ? 1 : 0);
    std::vector<Item> next;
    if (lines == 1 && !hidden) {
      next.push_back({shown[0], guide, "", 0, 0});  // a chain: the callee continues on the next line
    } else {
      for (size_t i = 0; i < shown.size(); ++i) next.push_back({shown[i], guide, i + 1 == lines ? "`- " : "|- ", 0, 0});
      if (hidden) next.push_back({0, guide, "`- ", hidden, hidden_bytes});
    }
    for (auto n = next.rbegin(); n != next.rend(); ++n) todo.push_back(std::move(*n));
  }
}

// ---- DOT ---------------------------------------------------------------------------------------

namespace {

const char* dot_fill(ProfileFrameKind k) {
  switch (k) {
    case ProfileFrameKind::User: return "#f8b878";
    case ProfileFrameKind::Torch: return "#f2df7e";
    case ProfileFrameKind::PythonRuntime: return "#d9cfe8";
    case ProfileFrameKind::Native: return "#95d5cb";
    case ProfileFrameKind::Synthetic: return "#dddddd";
    case ProfileFrameKind::Library: return "#f5cfa8";
  }
  return "#dddddd";
}

std::string shorten_left(const std::string& s, size_t w) {
  if (detail::text_width(s) <= w) return s;
  std::string out = s;
  while (detail::text_width(out) + 1 > w && !out.empty()) {
    size_t skip = 1;
    while (skip < out.size() && (static_cast<unsigned char>(out[skip]) & 0xC0) == 0x80) ++skip;
    out.erase(0, skip);
  }
  return "…" + out;
}

// An edge of the drawing: a call edge of the graph, or (dashed) the path from a
// frame's nearest drawn dominator when every call edge into it was left out.
struct DotEdge {
  const analysis::CallEdge* call = nullptr;  // null for a dashed "via" edge
  uint64_t bytes = 0;
};
using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, DotEdge>;

}  // namespace

// GCC 12 warns inside boost::write_graphviz's edge iterator (a boost::optional it
// cannot see initialised after inlining): a false positive in Boost's code, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
void write_callgraph_dot(std::ostream& out, const CallgraphView& view) {
  const CallGraph& g = *view.graph;
  const double threshold = view.min_share * double(g.bytes);
  // The heavy part: vertices whose total reaches the threshold, edges that do too.
  std::vector<uint32_t> dot_id(g.vertices.size(), kNoVertex), original;
  for (uint32_t v = 0; v < g.vertices.size(); ++v)
    if (v == 0 || (double(g.vertices[v].total_bytes) >= threshold && g.vertices[v].total_bytes > 0)) {
      dot_id[v] = static_cast<uint32_t>(original.size());
      original.push_back(v);
    }
  DotGraph dg(original.size());
  std::vector<bool> reached(g.vertices.size(), false);
  for (const auto& e : g.edges)
    if (dot_id[e.from] != kNoVertex && dot_id[e.to] != kNoVertex && double(e.bytes) >= threshold && e.bytes > 0) {
      boost::add_edge(dot_id[e.from], dot_id[e.to], DotEdge{&e, e.bytes}, dg);
      if (e.from != e.to) reached[e.to] = true;
    }
  // A drawn frame whose callers were all left out hangs from its nearest drawn dominator.
  for (uint32_t v : original) {
    if (v == 0 || reached[v]) continue;
    uint32_t d = g.vertices[v].dominator;
    while (d != kNoVertex && dot_id[d] == kNoVertex) d = g.vertices[d].dominator;
    if (d != kNoVertex) boost::add_edge(dot_id[d], dot_id[v], DotEdge{nullptr, g.vertices[v].total_bytes}, dg);
  }
  auto vertex_writer = [&](std::ostream& os, DotGraph::vertex_descriptor dv) {
    const CallVertex& v = g.vertices[original[dv]];
    std::string label, tooltip;
    std::string figures = "self " + human_bytes(v.self_bytes) + "\\ntotal " + human_bytes(v.total_bytes) + " (" +
                          share(v.total_bytes, g.bytes) + ")\\nretained " + human_bytes(v.retained_bytes) + " (" +
                          share(v.retained_bytes, g.bytes) + ")";
    const char* fill = "#eeeeee";
    if (original[dv] == 0) {
      label = "all\\n" + human_bytes(g.bytes) + " in " + with_commas(g.blocks) + " blocks";
      tooltip = "all stacks";
    } else {
      const auto& f = g.frames[v.frame];
      std::string fn =
          detail::printable(f.kind == ProfileFrameKind::Native ? detail::short_function(f.function) : f.function, 200);
      label = dot_escape(detail::fit_function(fn, 48));
      std::string loc = detail::printable(detail::frame_location(f), 200);
      if (!loc.empty()) label += "\\n" + dot_escape(shorten_left(loc, 48));
      label += "\\n" + figures;
      tooltip = dot_escape(detail::printable(detail::frame_label(f), 1000));
      fill = dot_fill(f.kind);
    }
    os << "[label=\"" << label << "\", tooltip=\"" << tooltip << "\", fillcolor=\"" << fill << "\"]";
  };
  auto edge_writer = [&](std::ostream& os, DotGraph::edge_descriptor de) {
    const DotEdge& e = dg[de];
    double s = g.bytes ? double(e.bytes) / double(g.bytes) : 0;
    char pen[32];
    std::snprintf(pen, sizeof pen, "%.2f", 1 + 5 * s);
    if (!e.call) {
      os << "[label=\"via lighter calls\", style=dashed, penwidth=" << pen << ", weight=1]";
      return;
    }
    os << "[label=\"" << human_bytes(e.bytes) << "\", penwidth=" << pen << ", weight=" << 1 + int(100 * s)
       << ", tooltip=\"" << with_commas(e.call->blocks) << (e.call->blocks == 1 ? " block" : " blocks") << "\"]";
  };
  auto graph_writer = [&](std::ostream& os) {
    os << "label=\"" << dot_escape(detail::printable("memsnap callgraph: " + view.source->path, 200)) << "\\n"
       << dot_escape(detail::printable(describe(*view.source), 300)) << "\\nframes with total below "
       << percent_text(view.min_share) << " and lighter calls left out (dashed: via lighter calls)\";\n"
       << "labelloc=t;\nfontname=\"Helvetica\";\n"
       << "node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
       << "edge [color=\"#555555\", fontname=\"Helvetica\", fontsize=9];\n";
  };
  boost::write_graphviz(out, dg, vertex_writer, edge_writer, graph_writer);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// ---- JSON --------------------------------------------------------------------------------------

namespace {

// Long strings are cut at 4096 bytes on a character boundary; JSON escapes the rest.
std::string json_text(std::string_view s) {
  if (s.size() <= 4096) return std::string(s);
  size_t n = 4096;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n));
}

}  // namespace

void write_callgraph_json(std::ostream& out, const CallgraphView& view) {
  using detail::Json;
  const CallGraph& g = *view.graph;
  Json doc;
  doc["schema_version"] = 1;
  doc["input"] = view.source->path;
  Json points = Json::array();
  for (const auto& p : view.source->points)
    points.push_back({{"device", p.device},
                      {"at", p.what},
                      {"event_index", detail::opt(p.event_index)},
                      {"time_us", detail::opt(p.time_us)}});
  doc["states"] = points;
  doc["state"] = analysis::to_string(view.source->state);
  doc["by_function"] = g.options.by_function;
  doc["cpp"] = g.options.cpp;
  doc["bytes"] = g.bytes;
  doc["blocks"] = g.blocks;
  Json vertices = Json::array();
  for (uint32_t i = 0; i < g.vertices.size(); ++i) {
    const CallVertex& v = g.vertices[i];
    Json j;
    j["id"] = i;
    if (i == 0) {
      j["function"] = "<root>";
      j["file"] = nullptr;
      j["line"] = nullptr;
      j["kind"] = "root";
    } else {
      const auto& f = g.frames[v.frame];
      j["function"] = json_text(f.function);
      j["file"] = f.kind == ProfileFrameKind::Synthetic ? Json(nullptr) : Json(json_text(f.file));
      j["line"] = detail::opt(f.line);
      j["kind"] = analysis::to_string(f.kind);
    }
    j["self_bytes"] = v.self_bytes;
    j["self_blocks"] = v.self_blocks;
    j["total_bytes"] = v.total_bytes;
    j["total_blocks"] = v.total_blocks;
    j["retained_bytes"] = v.retained_bytes;
    j["retained_blocks"] = v.retained_blocks;
    j["dominator"] = v.dominator == kNoVertex ? Json(nullptr) : Json(v.dominator);
    j["callers"] = v.callers;
    vertices.push_back(std::move(j));
  }
  doc["vertices"] = std::move(vertices);
  Json edges = Json::array();
  for (const auto& e : g.edges)
    edges.push_back({{"from", e.from}, {"to", e.to}, {"bytes", e.bytes}, {"blocks", e.blocks}});
  doc["edges"] = std::move(edges);
  detail::write_json(out, doc);
}

}  // namespace memsnap::report
