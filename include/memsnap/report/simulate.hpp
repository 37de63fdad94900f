// Printing `memsnap simulate`: recorded and simulated runs side by side, as text or JSON.
#pragma once

#include <ostream>

#include "memsnap/analysis/simulate.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

void write_simulate_text(std::ostream& out, const Source& src, const analysis::Simulation& sim, const TextStyle& style);
void write_simulate_json(std::ostream& out, const Source& src, const analysis::Simulation& sim);

}  // namespace memsnap::report
