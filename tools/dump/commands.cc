#include "tools/dump/commands.h"

namespace strata::dump {

int fail(Output& out, const std::string& message) {
  std::fprintf(stderr, "strata-dump: %s\n", message.c_str());
  if (out.format() == Format::json && !out.started()) {
    out.open_document();
    out.field("error", message);
    out.close_document();
  }
  return kExitError;
}

}  // namespace strata::dump
