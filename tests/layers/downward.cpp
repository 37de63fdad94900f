// Must compile with the analysis layer's include tree: analysis sees snapshot and below.
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/units.hpp"
int main() {
  return 0;
}
