// PodBuffer lives in util (io uses it too); this name stays for the pickle layer.
#pragma once

#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::pickle {
using util::PodBuffer;
}  // namespace memsnap::pickle
