// Must NOT compile with the analysis layer's include tree: analysis may not see report.
#include "memsnap/report/analyze.hpp"
int main() {
  return 0;
}
