// `analyze --file PATH` and `diff --file PATH`: one source file's memory by line in a loaded snapshot.
#pragma once

#include <optional>
#include <string>

#include "memsnap/analysis/file_lines.hpp"

namespace memsnap::app {

/// The lines of the files `query` matches (analysis/file_lines.hpp) on each device (or only
/// `device`): at the dump, at the allocated peak rebuilt as `flame --at peak` rebuilds it, and
/// over the trace. A Failure (exit 2) when the snapshot has no such device, or when `query`
/// matches no frame's file: one line naming `shown_path` and the closest file names.
analysis::FileLines file_view(const snapshot::Snapshot& snap, const std::string& shown_path, const std::string& query,
                              std::optional<int> device);

}  // namespace memsnap::app
