// Failpoints for crash tests of code paths a kill -9 from outside cannot hit reliably (between two
// writes of one commit). STRATA_FAILPOINTS="name=crash@N[,name2=crash@M]" in the broker's
// environment makes the Nth pass through failpoint `name` end the process at once — _exit, no
// flush, no cleanup: what kill -9 leaves behind. Read once; without the variable each check is one
// relaxed atomic load. Names in use: txn.write_marker (before each COMMIT/ABORT marker the
// transaction coordinator writes).
#pragma once

namespace strata::broker {

void failpoint(const char* name);

}  // namespace strata::broker
