// Must NOT compile with the report layer's include tree: report may not see app (the layer
// that runs a command), which sits between report and the CLI.
#include "memsnap/app/output.hpp"
int main() {
  return 0;
}
