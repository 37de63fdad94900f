// How flame graphs and call graphs name a frame, and how hostile snapshot strings are made safe (private to
// src/report).
//
// Every string from a snapshot is input: a file name may hold an escape sequence
// for the terminal, a `;` that would split a folded stack, a quote that would end
// a DOT label, or a megabyte of template arguments. These helpers are the one
// place that decides how such text is shown; the renderers add their format's
// own escaping (xml_escape, JSON, dot_quote) on top.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "memsnap/analysis/stacks.hpp"

namespace memsnap::report::detail {

/// Display width of UTF-8 text, counting code points.
size_t text_width(std::string_view s);

/// Terminal-safe text: C0 controls, DEL and invalid UTF-8 bytes as \xNN, C1
/// controls and bidirectional overrides as \uNNNN; at most `max` code points
/// (then the start is kept and "…" ends it).
std::string printable(std::string_view s, size_t max = 400);

/// The path as shown: what follows site-packages/ or dist-packages/ (the package
/// path, "torch/nn/modules/linear.py"), or lib/pythonX.Y/ for the standard
/// library; otherwise the path as recorded.
std::string_view display_path(std::string_view file);
/// The last component of a path (either slash).
std::string_view base_name(std::string_view file);

/// The name of a frame people read: a C++ signature without return type,
/// argument list and long template arguments ("at::native::empty_cuda");
/// Python names unchanged.
std::string short_function(std::string_view name);
/// `short` with leading scopes dropped ("…DeviceCachingAllocator::malloc")
/// until it fits `width`; the last scope (the function's own name) is never cut.
std::string fit_function(const std::string& short_name, size_t width);

/// "function (path:line)", "function (path)" (no line, or line 0), "function"
/// (no file, or "??"); synthetic frames as their name. Raw text: escape it for the output.
std::string frame_label(const analysis::ProfileFrame& f);
/// The location part alone: "path:line", "path" or "".
std::string frame_location(const analysis::ProfileFrame& f);

/// printable(frame_label(f), width) for the many frames of one snapshot's flame graphs: each
/// distinct frame's label worked out once, and each file's shown path once for all the
/// frames in it (thousands of frames may share one 1 MiB file name, issue 38). Frames are
/// told apart by where their strings are (views of the snapshot's interned strings, alive
/// as long as this is used), so equal frames of two trees share one label.
class FrameLabels {
 public:
  explicit FrameLabels(size_t width) : width_(width) {}
  const std::string& of(const analysis::ProfileFrame& f);

 private:
  using Key = std::tuple<const char*, size_t, const char*, size_t, std::optional<int64_t>, analysis::ProfileFrameKind>;
  size_t width_;
  std::map<Key, std::string> labels_;
  std::map<std::pair<const char*, size_t>, std::string> files_;  // a file's shown path, without the line
};

/// A frame label in at most `width` columns, never cutting the function's own
/// name: the short function, then its location shortened from the left
/// ("…/modules/linear.py:114", then "linear.py:114", then "…:114"; a file name
/// is never cut), dropped when nothing fits; then leading C++ scopes. Terminal-safe. Only a single name wider than
/// `width` exceeds it.
/// `s` in at most `width` columns: its start, "…" and its end (which keeps an extension
/// and line number: "vision_tr…former.py:93").
std::string middle_cut(const std::string& s, size_t width);
/// With `keep_file`, the location is never dropped nor cut below "file.py:LINE" (the
/// result may then be wider than `width`; the caller makes room).
std::string fit_frame(const analysis::ProfileFrame& f, size_t width, bool keep_file = false);

/// What fit_frame reads of a frame: its printable short name and location (a C++ name is
/// scanned whole to shorten it). A renderer that fits one frame to many widths (a flame
/// graph's boxes) works this out once per frame and fits it each time.
struct FitText {
  std::string name, loc;
  bool line = false;  // the frame has a line (then "…:LINE" can stand for the location)
};
FitText fit_text(const analysis::ProfileFrame& f);
std::string fit_frame(const FitText& t, size_t width, bool keep_file = false);

}  // namespace memsnap::report::detail
