// `memsnap flame -o flame.svg`: a flame graph of live memory drawn as one self-contained SVG.
//
// Layout: the root ("all") at the bottom, callees stacked above their callers,
// every frame as wide as its bytes and its children laid out left to right,
// heaviest first (the tree comes sorted). Frames narrower than a pixel are not
// drawn (their bytes stay inside their parent's width) and are counted in the
// footer: at most one frame per pixel per row, so the document stays a size a
// viewer opens whatever the number of distinct stacks. Text is monospace so its width is known without font
// metrics; a label that does not fit its box is shortened (C++ scopes, then the
// location, then cut with "…"), and omitted below three characters. Every
// string from the snapshot goes through printable() and xml_escape().
//
// By default the document is static: no script and no external reference, so
// it renders the same in a browser, an image viewer, rsvg-convert or a bug
// tracker. With `script`, a small inline script adds click-to-zoom (click a
// frame to make it full width; click the background or "reset zoom" to undo);
// the static drawing underneath is the same.
#include "memsnap/report/flame.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "frame_label.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::report {

namespace {

using analysis::FlameNode;
using analysis::FlameTree;
using analysis::ProfileFrame;
using analysis::ProfileFrameKind;

constexpr double kPad = 10;
constexpr double kFrameH = 17;
constexpr double kFont = 11;
constexpr double kCharW = kFont * 0.61;     // DejaVu Sans Mono and most monospace faces: 0.6 em
constexpr double kTop = 78;                 // title, subtitle and legend above the frames
constexpr double kMinWidth = 1.0;           // pixels: narrower frames are not drawn
constexpr size_t kChunk = size_t{1} << 20;  // bytes of SVG held before they are written
constexpr const char* kText = "#222222";
constexpr const char* kMuted = "#555555";

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string rgb(double r, double g, double b) {
  char buf[16];
  auto c = [](double v) { return static_cast<unsigned>(std::lround(std::clamp(v, 0.0, 255.0))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c(r), c(g), c(b));
  return buf;
}

// HSL (h in degrees, s and l in [0, 1]) to #rrggbb: SVG 1.1 viewers all read hex.
std::string hsl(double h, double s, double l) {
  double c = (1 - std::fabs(2 * l - 1)) * s, hp = std::fmod(h, 360.0) / 60,
         x = c * (1 - std::fabs(std::fmod(hp, 2) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1)
    r = c, g = x;
  else if (hp < 2)
    r = x, g = c;
  else if (hp < 3)
    g = c, b = x;
  else if (hp < 4)
    g = x, b = c;
  else if (hp < 5)
    r = x, b = c;
  else
    r = c, b = x;
  double m = l - c / 2;
  return rgb((r + m) * 255, (g + m) * 255, (b + m) * 255);
}

// A stable number in [0, 1) per name, so neighbouring frames of one kind differ a little.
double jitter(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return double(h % 1000) / 1000.0;
}

std::string kind_color(ProfileFrameKind k, double v) {
  switch (k) {
    case ProfileFrameKind::User: return hsl(14 + 18 * v, 0.85, 0.60 + 0.08 * v);            // warm orange-red
    case ProfileFrameKind::Torch: return hsl(44 + 10 * v, 0.80, 0.58 + 0.08 * v);           // yellow
    case ProfileFrameKind::PythonRuntime: return hsl(265 + 15 * v, 0.30, 0.74 + 0.06 * v);  // lavender
    case ProfileFrameKind::Native: return hsl(172 + 16 * v, 0.45, 0.58 + 0.08 * v);         // teal
    case ProfileFrameKind::Synthetic: return "#c9c9c9";
    case ProfileFrameKind::Library: return hsl(28 + 12 * v, 0.55, 0.72 + 0.06 * v);  // pale orange
  }
  return "#c9c9c9";
}

const char* kind_name(ProfileFrameKind k) {
  switch (k) {
    case ProfileFrameKind::User: return "user code";
    case ProfileFrameKind::Torch: return "torch";
    case ProfileFrameKind::PythonRuntime: return "Python runtime";
    case ProfileFrameKind::Native: return "C++ / native";
    case ProfileFrameKind::Synthetic: return "no frame";
    case ProfileFrameKind::Library: return "library";
  }
  return "";
}

// Red where memory grew, blue where it shrank, as strong as the change relative to
// the largest change in the picture (any change at least a visible tint).
std::string diff_color(const FlameNode& n, double max_change) {
  if (n.bytes == n.before || max_change <= 0) return "#e6e6e6";
  double change = std::fabs(double(n.bytes) - double(n.before));
  double t = 0.22 + 0.78 * std::min(1.0, change / max_change);
  double pale = 235 - 200 * t;
  return n.bytes > n.before ? rgb(250, pale, pale) : rgb(pale, pale + 10 * (1 - t), 250);
}

// Black on light fills, white on dark ones (strong reds and blues of a diff).
const char* text_color(const std::string& fill) {
  if (fill.size() != 7 || fill[0] != '#') return "#000000";
  auto channel = [&](size_t i) { return double(std::stoi(fill.substr(i, 2), nullptr, 16)) / 255; };
  double luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance < 0.4 ? "#ffffff" : "#000000";
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "0%";
  char buf[32];
  double p = 100 * part / whole;
  std::snprintf(buf, sizeof buf, p >= 10 || p == 0 ? "%.1f%%" : "%.2f%%", p);
  return buf;
}

std::string signed_bytes(uint64_t after, uint64_t before) {
  return after >= before ? "+" + human_bytes(after - before) : "-" + human_bytes(before - after);
}

// What every box of one frame shows of it, worked out when the first is drawn: a deep tree
// draws one frame in many boxes, and its label reads the frame's whole (C++) name.
struct FrameText {
  bool done = false;
  std::string full;     // the whole label, at most 300 columns
  std::string tip;      // the tooltip's first line
  detail::FitText fit;  // what fit_frame shortens for a narrow box
  double jitter = 0;
};

class FrameTexts {
 public:
  explicit FrameTexts(const FlameTree& t) : t_(t), texts_(t.frames.size()) {}
  const FrameText& of(uint32_t frame) {
    FrameText& x = texts_[frame];
    if (x.done) return x;
    const ProfileFrame& f = t_.frames[frame];
    const std::string label = detail::frame_label(f);
    x.full = detail::printable(label, 300);
    x.tip = detail::printable(label, 1000);
    if (f.kind != ProfileFrameKind::Synthetic) x.tip += " [" + std::string(kind_name(f.kind)) + "]";
    x.fit = detail::fit_text(f);
    x.jitter = jitter(f.function);
    x.done = true;
    return x;
  }

 private:
  const FlameTree& t_;
  std::vector<FrameText> texts_;
};

// The label of a frame in at most `chars` columns ("" when fewer than three fit).
std::string box_label(const FrameText& x, size_t chars) {
  if (chars < 3) return "";
  if (detail::text_width(x.full) <= chars) return x.full;
  std::string s = detail::fit_frame(x.fit, chars);
  if (detail::text_width(s) <= chars) return s;
  return detail::printable(s, chars);  // cut to the box: keeps the start, ends with "…"
}

std::string tooltip(const FlameTree& t, const FlameNode& n, bool root, const FlameSvgOptions& o, FrameTexts& texts) {
  const FlameNode& r = t.nodes[0];
  std::string tip;
  if (root) {
    tip = t.differential ? "all stacks" : "all: " + human_bytes(n.bytes) + " " + o.unit;
  } else {
    tip = texts.of(n.frame).tip;
  }
  std::string out = xml_escape(tip) + "&#10;";
  if (t.differential) {
    std::string change = n.before == 0  ? "new"
                         : n.bytes == 0 ? "gone"
                                        : percent(double(n.bytes) - double(n.before), double(n.before));
    if (!change.empty() && change[0] != '-' && change != "new" && change != "gone") change = "+" + change;
    out += xml_escape("before " + human_bytes(n.before) + ", after " + human_bytes(n.bytes) + ": " +
                      signed_bytes(n.bytes, n.before) + " (" + change + ")");
  } else {
    out += xml_escape(human_bytes(n.bytes) + ", " + percent(double(n.bytes), double(r.bytes)) + " of " +
                      human_bytes(r.bytes) + " " + o.unit + ", " + with_commas(n.blocks) +
                      (n.blocks == 1 ? " block" : " blocks"));
    if (!root && n.self_bytes > 0 && n.self_bytes != n.bytes)
      out += "&#10;" + xml_escape("allocated here (innermost frame): " + human_bytes(n.self_bytes));
  }
  return out;
}

// Click-to-zoom (only with FlameSvgOptions::script). Frames carry their layout in
// data attributes; zooming rescales x and width and refits the labels.
constexpr const char* kZoomScript = R"JS(
<script type="text/ecmascript"><![CDATA[
(function () {
  var svg = document.documentElement, frames = svg.querySelectorAll("g.f");
  var pad = +svg.getAttribute("data-pad"), full = +svg.getAttribute("data-full"), cw = +svg.getAttribute("data-cw");
  function fit(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text"), l = g.getAttribute("data-l");
    r.setAttribute("x", x); r.setAttribute("width", Math.max(w, 0));
    if (!t) return;
    var n = Math.floor((w - 6) / cw);
    t.setAttribute("x", x + 3);
    t.textContent = n < 3 ? "" : (l.length <= n ? l : l.slice(0, n - 1) + "\u2026");
  }
  function zoom(x0, w0, d0) {
    for (var i = 0; i < frames.length; i++) {
      var g = frames[i], x = +g.getAttribute("data-x"), w = +g.getAttribute("data-w"), d = +g.getAttribute("data-d");
      var inside = x >= x0 - 1e-6 && x + w <= x0 + w0 + 1e-6;
      var below = d < d0 && x <= x0 + 1e-6 && x + w >= x0 + w0 - 1e-6;
      g.style.display = inside || below ? "" : "none";
      g.style.opacity = below ? "0.6" : "";
      if (below) fit(g, pad, full);
      else if (inside) fit(g, pad + (x - x0) * full / w0, w * full / w0);
    }
  }
  for (var i = 0; i < frames.length; i++)
    frames[i].addEventListener("click", function (e) {
      e.stopPropagation();
      zoom(+this.getAttribute("data-x"), +this.getAttribute("data-w"), +this.getAttribute("data-d"));
    });
  var reset = document.getElementById("reset");
  function unzoom() { zoom(pad, full, 0); }
  svg.addEventListener("click", unzoom);
  if (reset) { reset.style.display = ""; reset.addEventListener("click", unzoom); }
})();
]]></script>
)JS";

// The document's size and scale, as every part of it needs them.
struct Layout {
  double width = 0;       // of the document
  double full = 0;        // of the root frame: the width less the margins
  double scale = 0;       // pixels per unit of a node's width
  double area = 0;        // height of the frames
  double height = 0;      // of the document
  double max_change = 0;  // a differential tree's largest change of any node, for diff_color
};

Layout layout(const FlameTree& t, const FlameSvgOptions& o) {
  Layout lay;
  lay.width = std::max(o.width, 200);
  lay.full = lay.width - 2 * kPad;
  const FlameNode& root = t.nodes.at(0);
  lay.scale = root.width > 0 ? lay.full / double(root.width) : 0;
  lay.area = double(t.max_depth + 1) * kFrameH;
  lay.height = kTop + lay.area + 34;
  if (t.differential)
    for (const auto& n : t.nodes)
      lay.max_change = std::max(lay.max_change, std::fabs(double(n.bytes) - double(n.before)));
  return lay;
}

// The XML prolog, the <svg> element (with the zoom script's layout) and the white background.
void write_document_start(std::string& svg, const Layout& lay, const FlameSvgOptions& o) {
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + num(lay.width) + "\" height=\"" +
         num(lay.height) + "\" viewBox=\"0 0 " + num(lay.width) + " " + num(lay.height) +
         "\" font-family=\"'DejaVu Sans Mono', Menlo, Consolas, monospace\"";
  if (o.script)
    svg += " data-pad=\"" + num(kPad) + "\" data-full=\"" + num(lay.full) + "\" data-cw=\"" + num(kCharW) + "\"";
  svg += ">\n";
  svg +=
      "<rect x=\"0\" y=\"0\" width=\"" + num(lay.width) + "\" height=\"" + num(lay.height) + "\" fill=\"#ffffff\"/>\n";
}

// Title, subtitle, the legend of colours and what the width means (and, with the
// script, the "reset zoom" button it shows).
void write_title_and_legend(std::string& svg, const FlameTree& t, const Layout& lay, const FlameSvgOptions& o) {
  std::string title = !o.title.empty() ? o.title
                      : t.differential ? "Change in live GPU memory by call stack (red grew, blue shrank)"
                                       : "Live GPU memory by call stack";
  svg += "<text x=\"" + num(kPad) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\" fill=\"" + kText + "\">" +
         xml_escape(detail::printable(title, 160)) + "</text>\n";
  const size_t room = size_t(lay.full / kCharW);  // columns of the subtitle's font
  std::string subtitle = detail::printable(o.subtitle, room);
  if (!o.subtitle_path.empty()) {  // the file gives way first: what and how much stay whole
    size_t rest = detail::text_width(subtitle) + 2;
    std::string path = detail::printable(o.subtitle_path, 1024);
    size_t path_room = room > rest + 16 ? room - rest : 16, slash = path.rfind('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (detail::text_width(path) > path_room && slash != std::string::npos)  // directories go first
      path = detail::text_width(base) + 4 <= path_room
                 ? detail::middle_cut(path.substr(0, slash), path_room - detail::text_width(base) - 1) + "/" + base
                 : base;
    subtitle = detail::middle_cut(path, path_room) + ": " + subtitle;  // the base name is cut last
  }
  if (!subtitle.empty())
    svg += "<text x=\"" + num(kPad) + "\" y=\"40\" font-size=\"11\" fill=\"" + kMuted + "\">" + xml_escape(subtitle) +
           "</text>\n";
  double lx = kPad;
  auto legend = [&](const std::string& color, const std::string& text) {
    svg += "<rect x=\"" + num(lx) + "\" y=\"50\" width=\"12\" height=\"12\" rx=\"2\" fill=\"" + color + "\"/>\n";
    svg += "<text x=\"" + num(lx + 16) + "\" y=\"60\" font-size=\"11\" fill=\"" + kText + "\">" + xml_escape(text) +
           "</text>\n";
    lx += 16 + double(text.size()) * kCharW + 18;
  };
  if (t.differential) {
    legend(rgb(250, 35, 35), "grew");
    legend(rgb(35, 35, 250), "shrank");
    legend("#e6e6e6", "unchanged");
    svg += "<text x=\"" + num(lx) + "\" y=\"60\" font-size=\"11\" fill=\"" + kMuted +
           "\">width: the larger of before and after</text>\n";
  } else {
    for (auto k : {ProfileFrameKind::User, ProfileFrameKind::Library, ProfileFrameKind::Torch,
                   ProfileFrameKind::PythonRuntime, ProfileFrameKind::Native, ProfileFrameKind::Synthetic})
      legend(kind_color(k, 0.4), kind_name(k));
    svg += "<text x=\"" + num(lx) + "\" y=\"60\" font-size=\"11\" fill=\"" + kMuted + "\">width: bytes</text>\n";
  }
  if (o.script)
    svg += "<text id=\"reset\" x=\"" + num(lay.width - kPad) +
           "\" y=\"60\" font-size=\"11\" text-anchor=\"end\" fill=\"#1a4f9c\" "
           "style=\"display:none;cursor:pointer\">reset zoom</text>\n";
}

// How a frame looks: its fill, the label that fits its box, and (for the zoom
// script, which refits it) the whole label.
struct FrameLook {
  std::string fill, label, full_label;
};

FrameLook frame_look(const FlameTree& t, const FlameNode& n, bool is_root, double w, const Layout& lay,
                     const FlameSvgOptions& o, FrameTexts& texts) {
  FrameLook k;
  size_t chars = w > 6 ? size_t((w - 6) / kCharW) : 0;
  if (is_root) {
    k.fill = t.differential ? diff_color(n, lay.max_change) : "#dcdcdc";
    k.full_label = t.differential ? "all: " + human_bytes(n.before) + " -> " + human_bytes(n.bytes)
                                  : "all: " + human_bytes(n.bytes) + " " + detail::printable(o.unit, 40);
    k.label = chars >= 3 ? detail::printable(k.full_label, chars) : "";
  } else {
    const FrameText& x = texts.of(n.frame);
    k.fill = t.differential ? diff_color(n, lay.max_change) : kind_color(t.frames[n.frame].kind, x.jitter);
    k.label = box_label(x, chars);
    if (o.script) k.full_label = x.full;
  }
  return k;
}

// One frame: a group with its tooltip, its box and its label (with the script,
// the layout the script zooms by).
void write_frame(std::string& svg, const FlameTree& t, size_t i, double x, double w, const Layout& lay,
                 const FlameSvgOptions& o, FrameTexts& texts) {
  const FlameNode& n = t.nodes[i];
  const bool is_root = i == 0;
  const double y = kTop + double(t.max_depth - n.depth) * kFrameH;
  const FrameLook k = frame_look(t, n, is_root, w, lay, o, texts);
  svg += "<g class=\"f\"";
  if (o.script) {
    svg += " data-x=\"" + num(x) + "\" data-w=\"" + num(w) + "\" data-d=\"" + std::to_string(n.depth) + "\" data-l=\"" +
           xml_escape(k.full_label) + "\" style=\"cursor:pointer\"";
  }
  svg += "><title>" + tooltip(t, n, is_root, o, texts) + "</title>";
  svg += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(kFrameH - 1) +
         "\" rx=\"2\" fill=\"" + k.fill + "\"/>";
  if (!k.label.empty() || o.script)
    svg += "<text x=\"" + num(x + 3) + "\" y=\"" + num(y + kFrameH - 5) + "\" font-size=\"" + num(kFont) +
           "\" fill=\"" + text_color(k.fill) + "\">" + xml_escape(k.label) + "</text>";
  svg += "</g>\n";
}

struct FrameCounts {
  size_t drawn = 0, omitted = 0;
};

// Every frame at least kMinWidth wide, children left to right from their parent's
// left edge; a narrower frame's subtree is skipped whole (and counted).
FrameCounts write_frames(std::ostream& os, std::string& svg, const FlameTree& t, const Layout& lay,
                         const FlameSvgOptions& o) {
  std::vector<double> x(t.nodes.size(), kPad), next(t.nodes.size(), kPad);
  FrameTexts texts(t);
  FrameCounts c;
  svg += "<g class=\"frames\">\n";
  for (size_t i = 0; i < t.nodes.size();) {
    const FlameNode& n = t.nodes[i];
    const double w = double(n.width) * lay.scale;
    if (i > 0) {
      x[i] = next[n.parent];
      next[n.parent] += w;
    }
    next[i] = x[i];
    if (w < kMinWidth && i > 0) {
      c.omitted += t.subtree_size[i];
      // The skipped subtree still takes its parent's room: advance past it.
      i += t.subtree_size[i];
      continue;
    }
    ++c.drawn;
    write_frame(svg, t, i, x[i], w, lay, o, texts);
    if (svg.size() >= kChunk) {  // out as it goes: an output bound stops a large picture early
      os << svg;
      svg.clear();
    }
    ++i;
  }
  svg += "</g>\n";
  return c;
}

// How many frames were drawn and how many were too narrow, under the frames.
void write_footer(std::string& svg, const FlameTree& t, const FrameCounts& c, const Layout& lay) {
  std::string foot = with_commas(c.drawn) + (c.drawn == 1 ? " frame" : " frames");
  if (c.omitted)
    foot += "; " + with_commas(c.omitted) + " narrower than 1 px left out (their bytes are in their callers)";
  if (t.nodes.at(0).width == 0) foot = "no memory in this state: nothing to draw";
  svg += "<text x=\"" + num(kPad) + "\" y=\"" + num(kTop + lay.area + 22) + "\" font-size=\"11\" fill=\"" + kMuted +
         "\">" + xml_escape(foot) + "</text>\n";
}

}  // namespace

size_t write_flame_svg(std::ostream& os, const FlameTree& t, const FlameSvgOptions& o) {
  const Layout lay = layout(t, o);
  std::string svg;
  svg.reserve(kChunk + 4096);
  write_document_start(svg, lay, o);
  write_title_and_legend(svg, t, lay, o);
  const FrameCounts counts = write_frames(os, svg, t, lay, o);
  write_footer(svg, t, counts, lay);
  if (o.script) svg += kZoomScript;
  svg += "</svg>\n";
  os << svg;
  return counts.omitted;
}

}  // namespace memsnap::report
