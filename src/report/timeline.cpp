// `memsnap timeline -o mem.svg`: one self-contained SVG, a panel per device.
//
// Plain SVG 1.1 text: no script, no external reference, no web font (generic
// families only), a white background so dark viewers show it as printed.
// Every series is drawn as steps (a state holds until the next event). Lines
// are told apart by colour and by dash, so the picture survives grayscale
// printing; site areas are pale and drawn first, so the lines stay on top.
// Labels are placed by a small greedy placer that tries a few positions around
// their anchor and keeps the first one that overlaps nothing placed before.
#include "memsnap/report/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "memsnap/report/escape.hpp"
#include "memsnap/util/units.hpp"
#include "text_util.hpp"

namespace memsnap::report {

namespace {

using analysis::Timeline;

// ---- small formatting helpers ---------------------------------------------------------

std::string num(double v) {  // coordinates: one decimal, no trailing ".0"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

// `v` with as few decimals as `step` needs (at most 3).
std::string tick_number(double v, double step) {
  int d = 0;
  while (d < 3 && std::fabs(step * std::pow(10, d) - std::round(step * std::pow(10, d))) > 1e-6) ++d;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", d, v);
  return buf;
}

// Code points of a UTF-8 string (continuation bytes do not count).
size_t text_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `n` code points.
std::string_view utf8_prefix(std::string_view s, size_t n) {
  size_t i = 0;
  for (size_t k = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && k++ == n) break;
  return s.substr(0, i);
}
// The last `n` code points.
std::string_view utf8_suffix(std::string_view s, size_t n) {
  size_t len = text_length(s);
  if (n >= len) return s;
  return s.substr(utf8_prefix(s, len - n).size());
}

// A site name in at most `w` characters. "dir/file.py:LINE:function" keeps its
// ":LINE:" whole (two sites of one file must stay apart): directories go first,
// then the end of the function name, then the start of the file name. Anything
// else loses its middle.
std::string shorten_site(const std::string& site, size_t w) {
  if (text_length(site) <= w) return site;
  size_t c2 = site.rfind(':');
  size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : site.rfind(':', c2 - 1);
  bool parsed =
      c1 != std::string::npos && c2 > c1 + 1 &&
      std::all_of(site.begin() + long(c1) + 1, site.begin() + long(c2), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (parsed) {
    std::string file = site.substr(0, c1), line = site.substr(c1, c2 - c1 + 1), fn = site.substr(c2 + 1);
    if (size_t slash = file.rfind('/'); slash != std::string::npos) file = "…/" + file.substr(slash + 1);
    size_t lw = text_length(line);
    if (text_length(file) + lw + text_length(fn) <= w) return file + line + fn;
    if (lw + 12 <= w) {
      size_t fn_room = std::max<size_t>(8, w - lw - std::min<size_t>(text_length(file), w - lw - 8));
      if (text_length(fn) > fn_room) fn = std::string(utf8_prefix(fn, fn_room - 1)) + "…";
      size_t file_room = w - lw - text_length(fn);
      if (text_length(file) > file_room) file = "…" + std::string(utf8_suffix(file, file_room - 1));
      return file + line + fn;
    }
  }
  if (w < 3) return std::string(utf8_prefix(site, w));
  size_t keep = w - 1;
  return std::string(utf8_prefix(site, keep / 2)) + "…" + std::string(utf8_suffix(site, keep - keep / 2));
}

// Approximate text width in pixels (no font metrics at hand: generic families).
// Sized for DejaVu Sans, the widest of the usual fallbacks, so boxes never clip.
double text_width(std::string_view s, double size, bool bold = false) {
  return double(text_length(s)) * size * (bold ? 0.65 : 0.6);
}

// ---- scales and ticks -------------------------------------------------------------------

struct ByteUnit {
  double scale;
  const char* name;
};

ByteUnit byte_unit(double max) {
  if (max >= double(1ull << 40)) return {double(1ull << 40), "TiB"};
  if (max >= double(1ull << 30)) return {double(1ull << 30), "GiB"};
  if (max >= double(1ull << 20)) return {double(1ull << 20), "MiB"};
  if (max >= 1024) return {1024, "KiB"};
  return {1, "B"};
}

// A step of 1, 2, 2.5 or 5 x 10^k giving about `target` intervals over `range`.
double nice_step(double range, double target) {
  double raw = range / std::max(1.0, target);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * 0.999) return m * mag;
  return 10 * mag;
}

struct Axis {
  double max = 1;  // domain is [0, max]
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

Axis bytes_axis(uint64_t max_bytes, double target) {
  double m = std::max<double>(double(max_bytes) * 1.12, 1024);
  ByteUnit u = byte_unit(m);
  double step = nice_step(m / u.scale, target);
  Axis a;
  a.max = std::ceil(m / u.scale / step - 1e-9) * step * u.scale;
  for (double v = 0; v <= a.max / u.scale + 1e-9; v += step) {
    a.ticks.push_back(v * u.scale);
    a.labels.push_back(v == 0 ? "0" : tick_number(v, step) + " " + u.name);
  }
  return a;
}

// Relative time in microseconds, labelled in the unit the span calls for.
Axis time_axis(double span_us, double target) {
  Axis a;
  a.max = std::max(span_us, 1.0) * 1.015;  // room for a marker on the last event
  struct U {
    double us;
    const char* name;
  };
  U u = a.max < 1e3          ? U{1, "us"}
        : a.max < 1e6        ? U{1e3, "ms"}
        : a.max < 180e6      ? U{1e6, "s"}
        : a.max < 3 * 3600e6 ? U{60e6, "min"}
                             : U{3600e6, "h"};
  double step = nice_step(a.max / u.us, target);
  for (double v = 0; v <= a.max / u.us + 1e-9; v += step) {
    a.ticks.push_back(v * u.us);
    a.labels.push_back(v == 0 ? "0" : tick_number(v, step) + " " + u.name);
  }
  return a;
}

Axis index_axis(double max_index, double target) {
  Axis a;
  a.max = std::max(max_index, 1.0) * 1.015;
  double step = std::max(1.0, nice_step(a.max, target));
  step = std::round(step);
  for (double v = 0; v <= a.max + 1e-9; v += step) {
    a.ticks.push_back(v);
    a.labels.push_back(with_commas(static_cast<uint64_t>(v)));
  }
  return a;
}

// ---- label placement ----------------------------------------------------------------------

struct Rect {
  double x0, y0, x1, y1;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

class Placer {
 public:
  explicit Placer(Rect bounds) : bounds_(bounds) {}
  // Something a label must not cover.
  void block(const Rect& r) { placed_.push_back(r); }
  // A stretch of a plotted line: a label may cover it, but one that covers fewer wins.
  void line(double x0, double y0, double x1, double y1) {
    lines_.push_back({std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1)});
  }
  // The candidate inside the bounds, clear of every placed label, that covers the
  // fewest line stretches (a crossing costs as much as ten places down the list,
  // so a label moves a little away from its anchor rather than hide a line).
  Rect place(const std::vector<Rect>& candidates) {
    const Rect* best = nullptr;
    size_t best_cost = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Rect& c = candidates[i];
      if (c.x0 < bounds_.x0 || c.x1 > bounds_.x1 || c.y0 < bounds_.y0 || c.y1 > bounds_.y1) continue;
      if (std::any_of(placed_.begin(), placed_.end(), [&](const Rect& p) { return p.overlaps(c); })) continue;
      size_t crossings = 0;
      const double m = 3;  // a line grazing the box counts: strokes have width
      for (const auto& l : lines_)
        crossings += c.x0 - m <= l.x1 && l.x0 <= c.x1 + m && c.y0 - m <= l.y1 && l.y0 <= c.y1 + m;
      size_t cost = crossings * 10 + i;
      if (!best || cost < best_cost) best = &c, best_cost = cost;
    }
    Rect r = best ? *best : candidates.front();
    if (!best) {  // nothing fits: keep the first, inside horizontally at least
      double w = r.x1 - r.x0;
      if (r.x1 > bounds_.x1) r.x0 = bounds_.x1 - w, r.x1 = bounds_.x1;
      if (r.x0 < bounds_.x0) r.x0 = bounds_.x0, r.x1 = bounds_.x0 + w;
    }
    placed_.push_back(r);
    return r;
  }

 private:
  Rect bounds_;
  std::vector<Rect> placed_;
  std::vector<Rect> lines_;
};

// A label on a white, slightly transparent box so it reads over lines and areas.
void boxed_label(std::string& svg, const Rect& r, const std::string& text, const char* color, double size,
                 bool bold = false) {
  svg += "<rect x=\"" + num(r.x0) + "\" y=\"" + num(r.y0) + "\" width=\"" + num(r.x1 - r.x0) + "\" height=\"" +
         num(r.y1 - r.y0) + "\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"" + color +
         "\" stroke-width=\"0.6\" rx=\"2\"/>\n";
  svg += "<text x=\"" + num(r.x0 + 4) + "\" y=\"" + num(r.y1 - (r.y1 - r.y0 - size) / 2 - size * 0.18) +
         "\" font-size=\"" + num(size) + "\" fill=\"" + color + "\"" + (bold ? " font-weight=\"bold\"" : "") + ">" +
         xml_escape(text) + "</text>\n";
}

// ---- styles -------------------------------------------------------------------------------------

struct LineStyle {
  const char* name;
  const char* color;
  const char* dash;  // empty: solid
  double width;
};
constexpr LineStyle kReserved{"reserved", "#3d3d3d", "7 4", 1.5};
constexpr LineStyle kActive{"active", "#d95f02", "2 2.5", 1.6};
constexpr LineStyle kAllocated{"allocated", "#1a4f9c", "", 1.8};
constexpr const char* kOom = "#d62728";
constexpr const char* kIteration = "#1b7f5b";
constexpr const char* kGrid = "#e4e4e4";
constexpr const char* kText = "#222222";
constexpr const char* kMuted = "#666666";
// Pale fills for site areas (the lines drawn over them stay readable), "other" last.
constexpr const char* kSiteFill[] = {"#a6c8ec", "#fdc48a", "#a8dba0", "#f4a6a6", "#cdb8e0",
                                     "#d2b4a8", "#f5bfdc", "#dede9a", "#a3e0e8", "#c2c2f0"};
constexpr const char* kOtherFill = "#dcdcdc";
// Fills by built-in role (roles.hpp order); a user's roles take kSiteFill's.
constexpr const char* kRoleFill[] = {"#a6c8ec", "#fdc48a", "#a8dba0", "#f4a6a6", "#cdb8e0", "#d2b4a8",
                                     "#f5bfdc", "#a3e0e8", "#dede9a", "#dcdcdc", "#efefef"};
// Phase bands above the plot, by Phase.
constexpr const char* kPhaseFill[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#bab0ac"};
static_assert(std::size(kRoleFill) == size_t(analysis::kBuiltinRoles) && std::size(kPhaseFill) == analysis::kPhases);

const char* role_fill(size_t r) {
  return r < std::size(kRoleFill) ? kRoleFill[r] : kSiteFill[r % std::size(kSiteFill)];
}

std::string role_name(const Timeline& t, size_t r) {
  return r < size_t(analysis::kBuiltinRoles) ? analysis::role_words(analysis::Role(r)) : t.role_names[r];
}

std::string dash_attr(const LineStyle& s) {
  return *s.dash ? std::string(" stroke-dasharray=\"") + s.dash + "\"" : std::string();
}

// ---- one device -----------------------------------------------------------------------------

struct Frame {
  double left, right, top, bottom;  // plot area
  double xmax, ymax;
  double x(double v) const { return left + (right - left) * std::clamp(v / xmax, 0.0, 1.0); }
  double y(double v) const { return bottom - (bottom - top) * std::clamp(v / ymax, 0.0, 1.0); }
};

struct Shared {
  std::optional<int64_t> origin_us;  // time of the first event over all devices
  double time_span_us = 0;
  double max_index = 0;
};

double x_value(const Timeline& t, uint32_t event, const std::optional<int64_t>& time, const Shared& sh) {
  if (t.timed && time && sh.origin_us) return double(detail::span_us(*sh.origin_us, *time));
  return double(event);
}

std::string when(const Timeline& t, uint32_t event, const std::optional<int64_t>& time, const Shared& sh) {
  if (t.timed && time && sh.origin_us) return "+" + detail::duration(detail::span_us(*sh.origin_us, *time));
  return "event " + with_commas(event);
}

// A step path through (x[i], v[i]): each value holds until the next point, the
// last one until x_end.
std::string step_path(const std::vector<double>& xs, const std::vector<double>& ys, double x_end) {
  std::string d;
  d.reserve(xs.size() * 16);
  std::string x, y;  // the pen, as written
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string nx = num(xs[i]), ny = num(ys[i]);
    if (i == 0)
      d += "M" + nx + " " + ny;
    else {
      if (nx != x) d += "H" + nx;
      if (ny != y) d += "V" + ny;
    }
    x = std::move(nx);
    y = std::move(ny);
  }
  if (!xs.empty() && num(x_end) != x) d += "H" + num(x_end);
  return d;
}

// ---- one panel, piece by piece ------------------------------------------------------------

constexpr double kRow = 17;          // legend rows
constexpr double kLabelSize = 11.5;  // peak and OOM labels
constexpr double kLabelH = 17;

// One device's panel as its pieces share it: the plot area and its scales, where
// each point sits on the x axis, and how many sites get an area of their own.
struct Panel {
  const Timeline& t;
  const Shared& sh;
  double top = 0;       // of the panel
  double width = 0;     // of the document
  double legend_w = 0;  // the legend's column, right of the plot
  Frame f{};
  Axis ya{}, xa{};
  std::vector<double> xs{};  // of each point
  // The state after a device's last event lasts until the dump, which came after
  // the last event of every device: the series run to the end of the shared axis.
  double x_end = 0;
  bool show_peak = false;
  size_t shown = 0;             // with sites: columns 0..shown-1 are sites, column `shown` is everything else
  std::vector<size_t> roles{};  // with roles: those with bytes at some point, bottom of the stack first

  double x_at(uint32_t event, const std::optional<int64_t>& time) const { return f.x(x_value(t, event, time, sh)); }
};

// How many sites the legend has room for, below its line and marker rows; the
// legend lists every area, so sites it has no room for are drawn as part of "other".
size_t sites_with_room(const Panel& p) {
  const Timeline& t = p.t;
  size_t legend_lines = 3 + (p.show_peak ? 1 : 0) + (t.ooms.empty() ? 0 : 1) + (t.iteration_starts.empty() ? 0 : 1);
  const double sites_top = p.f.top + 4 + double(legend_lines) * kRow + 8 + kRow;
  const size_t site_rows = static_cast<size_t>(std::max(0.0, (p.f.bottom + 30 - sites_top) / kRow + 1));
  return t.by_site ? std::min(t.sites.size(), site_rows > 1 ? site_rows - 1 : 0) : 0;
}

// The plot area (the legend takes the right), both axes' scales and each point's x,
// computed once for every piece of the panel.
Panel layout_panel(const Timeline& t, const Shared& sh, double top, const SvgOptions& o) {
  Panel p{.t = t, .sh = sh};
  p.top = top;
  p.width = o.width;
  const double H = o.panel_height;
  p.legend_w = t.by_site ? std::clamp(p.width * 0.3, 240.0, 380.0) : t.by_role ? 220.0 : 170.0;
  Frame& f = p.f;
  f.left = 74;
  f.right = p.width - p.legend_w - 20;
  f.top = top + 34;
  f.bottom = top + H - 46;

  uint64_t ymax_bytes = 0;
  for (const auto& pt : t.points) ymax_bytes = std::max({ymax_bytes, pt.reserved, pt.active, pt.allocated});
  double plot_h = f.bottom - f.top, plot_w = f.right - f.left;
  p.ya = bytes_axis(ymax_bytes, std::max(2.0, plot_h / 55));
  p.xa = t.timed ? time_axis(sh.time_span_us, std::max(2.0, plot_w / 110))
                 : index_axis(sh.max_index, std::max(2.0, plot_w / 110));
  f.ymax = p.ya.max;
  f.xmax = p.xa.max;

  p.xs.reserve(t.points.size());
  for (const auto& pt : t.points) p.xs.push_back(p.x_at(pt.event_index, pt.time_us));
  p.x_end = std::max(p.xs.empty() ? f.left : p.xs.back(), f.x(t.timed ? sh.time_span_us : sh.max_index));
  p.show_peak = t.peak && t.peak->allocated_bytes > 0;
  p.shown = sites_with_room(p);
  for (size_t r = 0; t.by_role && r < t.role_names.size(); ++r)
    for (size_t i = 0; i < t.points.size(); ++i)
      if (t.role_value(i, r)) {
        p.roles.push_back(r);
        break;
      }
  return p;
}

// The device, its event count and span, peak, iterations and OOMs in one line; it
// opens the panel's group.
void write_header(std::string& svg, const Panel& p) {
  const Timeline& t = p.t;
  std::string head = with_commas(t.events) + (t.events == 1 ? " trace event" : " trace events");
  if (t.timed && t.first_time_us && t.last_time_us && *t.last_time_us > *t.first_time_us)
    head += " over " + detail::duration(detail::span_us(*t.first_time_us, *t.last_time_us));
  else if (!t.timed)
    head += " (no timestamps: x is the event index)";
  if (t.peak) head += "  ·  peak " + human_bytes(t.peak->allocated_bytes) + " allocated";
  if (!t.iteration_starts.empty()) head += "  ·  " + with_commas(t.iteration_starts.size()) + " iterations";
  if (!t.ooms.empty()) head += "  ·  " + with_commas(t.ooms.size()) + (t.ooms.size() == 1 ? " OOM" : " OOMs");
  svg += "<g class=\"panel\" id=\"device-" + std::to_string(t.device) + "\">\n";
  svg += "<text x=\"" + num(p.f.left - 60) + "\" y=\"" + num(p.top + 20) + "\" font-size=\"13\" fill=\"" + kText +
         "\"><tspan font-weight=\"bold\">device " + std::to_string(t.device) + "</tspan><tspan dx=\"10\" fill=\"" +
         kMuted + "\" font-size=\"11.5\">" + xml_escape(head) + "</tspan></text>\n";
  if (!t.consistent)
    svg += "<text x=\"" + num(p.f.right) + "\" y=\"" + num(p.top + 20) +
           "\" font-size=\"11\" text-anchor=\"end\" fill=\"" + kActive.color +
           "\">replay inconsistent: values are approximate (see memsnap analyze)</text>\n";
}

// Grid lines, ticks and their labels on both axes, and the x axis' caption.
void write_grid(std::string& svg, const Panel& p) {
  const Frame& f = p.f;
  for (size_t i = 0; i < p.ya.ticks.size(); ++i) {
    double y = f.y(p.ya.ticks[i]);
    if (i > 0)
      svg += "<line x1=\"" + num(f.left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(f.right) + "\" y2=\"" + num(y) +
             "\" stroke=\"" + kGrid + "\" stroke-width=\"1\"/>\n";
    svg += "<text x=\"" + num(f.left - 7) + "\" y=\"" + num(y + 4) + "\" font-size=\"11\" text-anchor=\"end\" fill=\"" +
           kText + "\">" + xml_escape(p.ya.labels[i]) + "</text>\n";
  }
  for (size_t i = 0; i < p.xa.ticks.size(); ++i) {
    double x = f.x(p.xa.ticks[i]);
    if (i > 0)
      svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom) +
             "\" stroke=\"" + kGrid + "\" stroke-width=\"1\"/>\n";
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.bottom) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom + 4) +
           "\" stroke=\"" + kText + "\" stroke-width=\"1\"/>\n";
    const char* anchor = i == 0 ? "start" : "middle";
    svg += "<text x=\"" + num(x) + "\" y=\"" + num(f.bottom + 17) + "\" font-size=\"11\" text-anchor=\"" + anchor +
           "\" fill=\"" + kText + "\">" + xml_escape(p.xa.labels[i]) + "</text>\n";
  }
  svg += "<text x=\"" + num((f.left + f.right) / 2) + "\" y=\"" + num(f.bottom + 35) +
         "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" + kMuted + "\">" +
         (p.t.timed ? "time since the first event" : "trace event index") + "</text>\n";
}

// The value of area `k` at point `i`: site k, or for k == shown every other site.
uint64_t area_value(const Panel& p, size_t i, size_t k) {
  if (k < p.shown) return p.t.site_value(i, k);
  uint64_t v = 0;
  for (size_t c = p.shown; c < p.t.site_columns(); ++c) v += p.t.site_value(i, c);
  return v;
}

// With sites: one pale area per shown site, stacked from the bottom, then "other sites".
// With roles: one area per role that holds bytes.
void write_site_areas(std::string& svg, const Panel& p) {
  const Timeline& t = p.t;
  if ((!t.by_site && !t.by_role) || t.points.empty()) return;
  const std::vector<double>& xs = p.xs;
  std::vector<double> lower(t.points.size(), 0), upper(t.points.size(), 0);
  const size_t areas = t.by_role ? p.roles.size() : p.shown + 1;
  for (size_t k = 0; k < areas; ++k) {
    for (size_t i = 0; i < t.points.size(); ++i)
      upper[i] = lower[i] + double(t.by_role ? t.role_value(i, p.roles[k]) : area_value(p, i, k));
    std::vector<double> yu(upper.size()), yl(lower.size());
    for (size_t i = 0; i < upper.size(); ++i) yu[i] = p.f.y(upper[i]), yl[i] = p.f.y(lower[i]);
    // Upper edge forwards, lower edge backwards.
    std::string d = step_path(xs, yu, p.x_end);
    std::string pen_x = num(p.x_end);
    for (size_t i = xs.size(); i-- > 0;) {
      d += "V" + num(yl[i]);
      if (std::string nx = num(xs[i]); nx != pen_x) d += "H" + nx, pen_x = nx;
    }
    d += "Z";
    const char* fill = t.by_role      ? role_fill(p.roles[k])
                       : k == p.shown ? kOtherFill
                                      : kSiteFill[k % std::size(kSiteFill)];
    std::string name = t.by_role      ? role_name(t, p.roles[k])
                       : k == p.shown ? std::string("other sites")
                                      : t.sites[k].site;
    svg +=
        "<path d=\"" + d + "\" fill=\"" + fill + "\" stroke=\"none\"><title>" + xml_escape(name) + "</title></path>\n";
    lower = upper;
  }
}

// One series as a step line; its stretches go to the placer so labels avoid them.
void write_series(std::string& svg, const Panel& p, Placer& placer, const LineStyle& s,
                  uint64_t analysis::TimelinePoint::*field) {
  const Timeline& t = p.t;
  const std::vector<double>& xs = p.xs;
  std::vector<double> ys(t.points.size());
  for (size_t i = 0; i < t.points.size(); ++i) {
    ys[i] = p.f.y(double(t.points[i].*field));
    if (i > 0) placer.line(xs[i - 1], ys[i - 1], xs[i], ys[i - 1]), placer.line(xs[i], ys[i - 1], xs[i], ys[i]);
  }
  placer.line(xs.back(), ys.back(), p.x_end, ys.back());
  svg += "<path d=\"" + step_path(xs, ys, p.x_end) + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"" +
         num(s.width) + "\"" + dash_attr(s) + " stroke-linejoin=\"round\"><title>" + s.name + "</title></path>\n";
  if (num(xs.front()) == num(p.x_end))  // a single instant: a path of no length shows nothing
    svg += "<circle cx=\"" + num(p.x_end) + "\" cy=\"" + num(ys.back()) + "\" r=\"3\" fill=\"" + s.color + "\"/>\n";
}

// The site areas under the three series, clipped to the plot area.
void write_plot(std::string& svg, const Panel& p, Placer& placer) {
  const std::string clip = "plot" + std::to_string(p.t.device);
  svg += "<clipPath id=\"" + clip + "\"><rect x=\"" + num(p.f.left) + "\" y=\"" + num(p.f.top - 2) + "\" width=\"" +
         num(p.f.right - p.f.left + 2) + "\" height=\"" + num(p.f.bottom - p.f.top + 3) + "\"/></clipPath>\n";
  svg += "<g clip-path=\"url(#" + clip + ")\">\n";
  write_site_areas(svg, p);
  if (!p.t.points.empty()) {
    write_series(svg, p, placer, kReserved, &analysis::TimelinePoint::reserved);
    write_series(svg, p, placer, kActive, &analysis::TimelinePoint::active);
    write_series(svg, p, placer, kAllocated, &analysis::TimelinePoint::allocated);
  }
  svg += "</g>\n";
}

// The y and x axis lines, over the plot.
void write_axis_lines(std::string& svg, const Panel& p) {
  svg += "<path d=\"M" + num(p.f.left) + " " + num(p.f.top) + "V" + num(p.f.bottom) + "H" + num(p.f.right) +
         "\" fill=\"none\" stroke=\"" + kText + "\" stroke-width=\"1\"/>\n";
}

// A short green tick across the x axis where each iteration starts.
void write_iteration_ticks(std::string& svg, const Panel& p) {
  for (const auto& b : p.t.iteration_starts) {
    double x = p.x_at(b.event_index, b.time_us);
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(p.f.bottom - 4) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(p.f.bottom + 6) + "\" stroke=\"" + kIteration + "\" stroke-width=\"1.5\"/>\n";
  }
}

// The peak: a dot on the allocated line, and its label next to it.
struct PeakMark {
  double x = 0, y = 0;
  std::string text;
};

// Where the peak's dot goes, kept clear of labels placed from now on.
std::optional<PeakMark> reserve_peak(const Panel& p, Placer& placer) {
  if (!p.show_peak) return std::nullopt;
  const auto& pk = *p.t.peak;
  PeakMark m;
  m.x = p.x_at(pk.event_index, pk.time_us);
  m.y = p.f.y(double(pk.allocated_bytes));
  placer.block({m.x - 5, m.y - 5, m.x + 5, m.y + 5});
  m.text = "peak " + human_bytes(pk.allocated_bytes) + " at " + when(p.t, pk.event_index, pk.time_us, p.sh);
  return m;
}

// The peak's label beside the dot first, then further above or below it (with a
// leader line), and the dot over both.
void write_peak(std::string& svg, const PeakMark& m, Placer& placer) {
  double w = text_width(m.text, kLabelSize, true) + 8;
  std::vector<Rect> cand;
  for (double dy : {6.0, 28.0, 50.0, 75.0, 100.0, 130.0}) {
    cand.push_back({m.x + 8, m.y - dy - kLabelH, m.x + 8 + w, m.y - dy});  // above right
    cand.push_back({m.x - 8 - w, m.y - dy - kLabelH, m.x - 8, m.y - dy});  // above left
    cand.push_back({m.x + 8, m.y + dy, m.x + 8 + w, m.y + dy + kLabelH});  // below right
    cand.push_back({m.x - 8 - w, m.y + dy, m.x - 8, m.y + dy + kLabelH});  // below left
  }
  Rect r = placer.place(cand);
  // A leader line when the label had to move away from the dot.
  double lx = std::clamp(m.x, r.x0, r.x1), ly = std::clamp(m.y, r.y0, r.y1);
  if (std::hypot(lx - m.x, ly - m.y) > 12)
    svg += "<line x1=\"" + num(m.x) + "\" y1=\"" + num(m.y) + "\" x2=\"" + num(lx) + "\" y2=\"" + num(ly) +
           "\" stroke=\"" + kAllocated.color + "\" stroke-width=\"0.8\"/>\n";
  boxed_label(svg, r, m.text, kAllocated.color, kLabelSize, true);
  svg += "<circle cx=\"" + num(m.x) + "\" cy=\"" + num(m.y) + "\" r=\"4\" fill=\"" + kAllocated.color +
         "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n";
}

// OOMs: a red line across the plot; the first few get a label at the top.
void write_oom_markers(std::string& svg, const Panel& p, Placer& placer) {
  const Timeline& t = p.t;
  for (const auto& oom : t.ooms) {
    double x = p.x_at(oom.event_index, oom.time_us);
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(p.f.top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(p.f.bottom) +
           "\" stroke=\"" + kOom + "\" stroke-width=\"1.5\"><title>OOM at " +
           xml_escape(when(t, oom.event_index, oom.time_us, p.sh)) + "</title></line>\n";
    placer.line(x, p.f.top, x, p.f.bottom);
  }
  for (size_t i = 0; i < t.ooms.size() && i < 3; ++i) {
    const auto& oom = t.ooms[i];
    double x = p.x_at(oom.event_index, oom.time_us);
    std::string text = "OOM: " + human_bytes(oom.requested_bytes) + " requested";
    if (oom.device_free_bytes) text += ", " + human_bytes(oom.device_free_bytes) + " free on device";
    text += " (" + when(t, oom.event_index, oom.time_us, p.sh) + ")";
    double w = text_width(text, kLabelSize) + 8;
    std::vector<Rect> cand;
    for (double dy : {0.0, kLabelH + 3, 2 * (kLabelH + 3), 3 * (kLabelH + 3)}) {
      cand.push_back({x - w - 4, p.f.top + 4 + dy, x - 4, p.f.top + 4 + dy + kLabelH});
      cand.push_back({x + 4, p.f.top + 4 + dy, x + 4 + w, p.f.top + 4 + dy + kLabelH});
    }
    boxed_label(svg, placer.place(cand), text, kOom, kLabelSize);
  }
}

// The legend's pen: its left edge and the baseline of the next row.
struct LegendPen {
  double x, y;
};

// A legend row: a key drawn by the caller at the pen, then its text.
void legend_text(std::string& svg, LegendPen& pen, const char* text) {
  svg += "<text x=\"" + num(pen.x + 33) + "\" y=\"" + num(pen.y + 4) + "\" font-size=\"11.5\" fill=\"" + kText + "\">" +
         xml_escape(text) + "</text>\n";
  pen.y += kRow;
}

// The three series, then the peak, OOM and iteration marks the panel shows.
void write_line_legend(std::string& svg, const Panel& p, LegendPen& pen) {
  for (const LineStyle* s : {&kReserved, &kActive, &kAllocated}) {
    svg += "<line x1=\"" + num(pen.x) + "\" y1=\"" + num(pen.y) + "\" x2=\"" + num(pen.x + 26) + "\" y2=\"" +
           num(pen.y) + "\" stroke=\"" + s->color + "\" stroke-width=\"" + num(s->width + 0.4) + "\"" + dash_attr(*s) +
           "/>\n";
    legend_text(svg, pen, s->name);
  }
  if (p.show_peak) {
    svg += "<circle cx=\"" + num(pen.x + 13) + "\" cy=\"" + num(pen.y) + "\" r=\"4\" fill=\"" + kAllocated.color +
           "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n";
    legend_text(svg, pen, "peak allocated");
  }
  if (!p.t.ooms.empty()) {
    svg += "<line x1=\"" + num(pen.x + 13) + "\" y1=\"" + num(pen.y - 7) + "\" x2=\"" + num(pen.x + 13) + "\" y2=\"" +
           num(pen.y + 7) + "\" stroke=\"" + kOom + "\" stroke-width=\"1.5\"/>\n";
    legend_text(svg, pen, "out of memory");
  }
  if (!p.t.iteration_starts.empty()) {
    svg += "<line x1=\"" + num(pen.x + 13) + "\" y1=\"" + num(pen.y - 5) + "\" x2=\"" + num(pen.x + 13) + "\" y2=\"" +
           num(pen.y + 5) + "\" stroke=\"" + kIteration + "\" stroke-width=\"1.5\"/>\n";
    legend_text(svg, pen, "iteration start");
  }
}

// With sites: a swatch, the (shortened) site and its own peak per area, top of
// the stack first so the legend reads in the order of the areas.
void write_site_legend(std::string& svg, const Panel& p, LegendPen& pen) {
  const Timeline& t = p.t;
  const size_t shown = p.shown;
  pen.y += 8;
  svg += "<text x=\"" + num(pen.x) + "\" y=\"" + num(pen.y + 4) + "\" font-size=\"11.5\" font-weight=\"bold\" fill=\"" +
         kText + "\">live bytes by site (own peak)</text>\n";
  pen.y += kRow;
  const double mono = 10.5;
  const double bytes_w = 62;
  size_t chars = static_cast<size_t>(std::max(8.0, (p.legend_w - 22 - bytes_w - 6) / (mono * 0.6)));
  for (size_t j = 0; j <= shown; ++j) {
    size_t k = shown - j;
    bool other = k == shown;
    const char* fill = other ? kOtherFill : kSiteFill[k % std::size(kSiteFill)];
    std::string name =
        other ? (shown < t.sites.size() ? "other sites (" + std::to_string(t.sites.size() - shown) + " of the top " +
                                              std::to_string(t.sites.size()) + " among them)"
                                        : std::string("other sites"))
              : t.sites[k].site;
    svg += "<g><title>" + xml_escape(name) +
           (other ? std::string() : " (peak " + human_bytes(t.sites[k].peak_live_bytes) + " live)") + "</title>";
    svg += "<rect x=\"" + num(pen.x) + "\" y=\"" + num(pen.y - 6) + "\" width=\"12\" height=\"12\" fill=\"" + fill +
           "\" stroke=\"#999999\" stroke-width=\"0.5\"/>";
    svg += "<text x=\"" + num(pen.x + 18) + "\" y=\"" + num(pen.y + 4) + "\" font-size=\"" + num(mono) +
           "\" font-family=\"monospace\" fill=\"" + kText + "\">" +
           xml_escape(other ? std::string("other sites") : shorten_site(name, chars)) + "</text>";
    if (!other)
      svg += "<text x=\"" + num(p.width - 8) + "\" y=\"" + num(pen.y + 4) +
             "\" font-size=\"10.5\" text-anchor=\"end\" fill=\"" + kMuted + "\">" +
             xml_escape(human_bytes(t.sites[k].peak_live_bytes)) + "</text>";
    else if (shown < t.sites.size())
      svg += "<text x=\"" + num(p.width - 8) + "\" y=\"" + num(pen.y + 4) +
             "\" font-size=\"10.5\" text-anchor=\"end\" fill=\"" + kMuted + "\">+" +
             std::to_string(t.sites.size() - shown) + " listed in the CSV</text>";
    svg += "</g>\n";
    pen.y += kRow;
  }
}

// With roles: a swatch, the role and the most it held at a plotted point, top of the stack first;
// then a swatch per phase the bands above the plot show.
void write_role_legend(std::string& svg, const Panel& p, LegendPen& pen) {
  const Timeline& t = p.t;
  auto title = [&](const char* text) {
    pen.y += 8;
    svg += "<text x=\"" + num(pen.x) + "\" y=\"" + num(pen.y + 4) +
           "\" font-size=\"11.5\" font-weight=\"bold\" fill=\"" + kText + "\">" + text + "</text>\n";
    pen.y += kRow;
  };
  auto row = [&](const char* fill, const std::string& name, const std::string& right) {
    svg += "<g><title>" + xml_escape(name + (right.empty() ? "" : " (" + right + ")")) + "</title><rect x=\"" +
           num(pen.x) + "\" y=\"" + num(pen.y - 6) + "\" width=\"12\" height=\"12\" fill=\"" + fill +
           "\" stroke=\"#999999\" stroke-width=\"0.5\"/><text x=\"" + num(pen.x + 18) + "\" y=\"" + num(pen.y + 4) +
           "\" font-size=\"11\" fill=\"" + kText + "\">" + xml_escape(detail::term(name, 40)) + "</text><text x=\"" +
           num(p.width - 8) + "\" y=\"" + num(pen.y + 4) + "\" font-size=\"10.5\" text-anchor=\"end\" fill=\"" +
           kMuted + "\">" + xml_escape(right) + "</text></g>\n";
    pen.y += kRow;
  };
  title("live bytes by role (most)");
  for (size_t j = p.roles.size(); j-- > 0;) {
    uint64_t most = 0;
    for (size_t i = 0; i < t.points.size(); ++i) most = std::max(most, t.role_value(i, p.roles[j]));
    row(role_fill(p.roles[j]), role_name(t, p.roles[j]), human_bytes(most));
  }
  if (t.phases.empty()) return;
  bool seen[analysis::kPhases] = {};
  for (const auto& s : t.phases) seen[size_t(s.phase)] = true;
  title("phases (bands above)");
  for (int k = 0; k < analysis::kPhases; ++k)
    if (seen[k]) {
      std::string words = analysis::phase_words(analysis::Phase(k));
      row(kPhaseFill[k], words.rfind("the ", 0) == 0 ? words.substr(4) : words, "");
    }
}

// With roles and known phases: a band above the plot per span, coloured by its phase.
void write_phase_bands(std::string& svg, const Panel& p) {
  const Timeline& t = p.t;
  for (size_t k = 0; k < t.phases.size(); ++k) {
    const auto& s = t.phases[k];
    double x0 = std::max(p.f.left, p.x_at(s.first_event, s.time_us));
    double x1 = k + 1 < t.phases.size() ? p.x_at(t.phases[k + 1].first_event, t.phases[k + 1].time_us) : p.x_end;
    if (x1 - x0 < 0.25) continue;  // narrower than the eye can see
    svg += "<rect x=\"" + num(x0) + "\" y=\"" + num(p.f.top - 9) + "\" width=\"" + num(x1 - x0) +
           "\" height=\"6\" fill=\"" + kPhaseFill[size_t(s.phase)] + "\"><title>" + analysis::to_string(s.phase) +
           " from event " + std::to_string(s.first_event) + "</title></rect>\n";
  }
}

// Header, grid, the plot, the axes, then the markers and their labels (placed
// clear of each other and of the lines), then the legend.
void write_panel(std::string& svg, const Timeline& t, const Shared& sh, double top, const SvgOptions& o) {
  const Panel p = layout_panel(t, sh, top, o);
  write_header(svg, p);
  write_grid(svg, p);
  Placer placer({p.f.left + 2, p.f.top + 2, p.f.right - 2, p.f.bottom - 10});
  write_plot(svg, p, placer);
  if (t.by_role) write_phase_bands(svg, p);
  write_axis_lines(svg, p);
  write_iteration_ticks(svg, p);
  // The peak's dot is kept clear first; its label is placed after the OOMs' labels.
  std::optional<PeakMark> peak = reserve_peak(p, placer);
  write_oom_markers(svg, p, placer);
  if (peak) write_peak(svg, *peak, placer);
  LegendPen pen{p.width - p.legend_w - 4, p.f.top + 4};
  write_line_legend(svg, p, pen);
  if (t.by_site) write_site_legend(svg, p, pen);
  if (t.by_role) write_role_legend(svg, p, pen);
  svg += "</g>\n";
}

}  // namespace

void write_timeline_svg(std::ostream& out, const TimelineView& view, const SvgOptions& o) {
  const auto& tls = *view.timelines;
  Shared sh;
  sh.origin_us = view.origin_us;
  for (const auto& t : tls)
    if (t.events) sh.max_index = std::max(sh.max_index, double(t.events - 1));
  for (const auto& t : tls)
    if (t.timed && t.last_time_us && sh.origin_us)
      sh.time_span_us = std::max(sh.time_span_us, double(detail::span_us(*sh.origin_us, *t.last_time_us)));

  const double title_h = 50;
  const double total_h = title_h + double(tls.size()) * o.panel_height + 6;
  std::string name = view.input ? view.input->path : std::string();
  if (name == "-") name = "<stdin>";
  std::string base = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + num(total_h) + "\" viewBox=\"0 0 " + std::to_string(o.width) + " " + num(total_h) +
         "\" font-family=\"Helvetica, Arial, 'DejaVu Sans', sans-serif\">\n";
  svg += "<title>memsnap timeline: " + xml_escape(base) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"14\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"" + std::string(kText) + "\">" +
         xml_escape(base) + "</text>\n";
  std::string sub = "GPU memory over time, " + std::to_string(tls.size()) + (tls.size() == 1 ? " device" : " devices") +
                    "  ·  memsnap timeline";
  svg +=
      "<text x=\"14\" y=\"41\" font-size=\"11\" fill=\"" + std::string(kMuted) + "\">" + xml_escape(sub) + "</text>\n";
  for (size_t k = 0; k < tls.size(); ++k) write_panel(svg, tls[k], sh, title_h + double(k) * o.panel_height, o);
  svg += "</svg>\n";
  out << svg;
}

}  // namespace memsnap::report
