// Rendering of `memsnap flame` and `memsnap diff --flame`: folded stacks and a self-contained SVG flame graph.
// (src/report/flame.cpp: the SVG; flame_folded.cpp: the folded stacks.)
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/stacks.hpp"

namespace memsnap::report {

/// Which states a profile describes, for titles and JSON (filled by the command).
struct ProfileSource {
  struct Point {
    int device = 0;
    std::string what = "dump";  // "dump", "peak", "oom" or "event"
    std::optional<uint32_t> event_index;
    std::optional<int64_t> time_us;
  };
  std::string path;  // as the user named it ("<stdin>" for -)
  std::vector<Point> points;
  analysis::StackState state = analysis::StackState::Allocated;
};

/// "device 0 at the peak (event 513)", "devices 0 and 1 as dumped", ...
std::string describe(const ProfileSource& source);

/// Folded stacks, one line per distinct stack: `frame;frame;...;frame BYTES`,
/// root (outermost) first, each frame `function (file:line)`, lines sorted
/// bytewise. The format of flamegraph.pl, inferno and speedscope. Frames are
/// terminal-safe (control characters as \xNN) and a ';' inside a name is written
/// \x3b, so every line splits back into the same frames.
void write_folded(std::ostream& out, const analysis::StackProfile& profile);
/// Differential folded stacks, `frame;...;frame BEFORE AFTER`: the two-count
/// form flamegraph.pl draws as a differential flame graph (what difffolded.pl writes).
void write_folded(std::ostream& out, const analysis::DiffProfile& diff);

struct FlameSvgOptions {
  int width = 1200;                // pixels
  std::string title;               // first line; empty: a default
  std::string subtitle;            // second line (which file and state)
  std::string subtitle_path;       // the file, before the subtitle ("PATH: SUBTITLE"); cut first to fit
  std::string unit = "allocated";  // what the bytes are, for the root frame ("allocated", "active", ...)
  bool script = false;             // embed the small click-to-zoom script
};

/// One SVG document. Frames are as wide as their bytes (a differential tree: the
/// larger of before and after), the root at the bottom; each has a <title>
/// tooltip with its bytes and share. Colours: by file (user code, torch, the
/// Python runtime, C++/native, pseudo-frames), or for a differential tree red
/// where memory grew and blue where it shrank. Labels are cut to their box.
/// Without `script` the document is static: no script, no external reference.
/// Frames narrower than one pixel are left out with their callees (flamegraph.pl's
/// --minwidth), their bytes inside their caller; the footer counts them. Returns that count.
size_t write_flame_svg(std::ostream& out, const analysis::FlameTree& tree, const FlameSvgOptions& options);

}  // namespace memsnap::report
