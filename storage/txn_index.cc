// Aborted-transaction index files (see txn_index.h).
#include "storage/txn_index.h"

#include "protocol/record/byte_order.h"
#include "storage/file_util.h"

namespace strata::storage {

std::string encode_aborted_txns(const std::vector<AbortedTxn>& entries) {
  std::string out(entries.size() * kAbortedTxnEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const AbortedTxn& e : entries) {
    protocol::detail::store_be<int16_t>(p, kAbortedTxnVersion);
    protocol::detail::store_be<int64_t>(p + 2, e.producer_id);
    protocol::detail::store_be<int64_t>(p + 10, e.first_offset);
    protocol::detail::store_be<int64_t>(p + 18, e.last_offset);
    protocol::detail::store_be<int64_t>(p + 26, e.last_stable_offset);
    p += kAbortedTxnEntrySize;
  }
  return out;
}

Result<std::optional<TxnIndexContent>> read_txn_index(Env* env, const std::string& path) {
  auto text = read_file_to_string(env, path);
  if (!text.ok()) {
    if (text.status().code() == Errc::not_found) return std::optional<TxnIndexContent>();
    return text.status();
  }
  TxnIndexContent out;
  const auto* p = reinterpret_cast<const uint8_t*>(text->data());
  const size_t n = text->size() / kAbortedTxnEntrySize;
  out.torn = text->size() % kAbortedTxnEntrySize != 0;
  for (size_t i = 0; i < n; ++i, p += kAbortedTxnEntrySize) {
    if (protocol::detail::load_be<int16_t>(p) != kAbortedTxnVersion) {
      out.torn = true;
      break;
    }
    AbortedTxn e;
    e.producer_id = protocol::detail::load_be<int64_t>(p + 2);
    e.first_offset = protocol::detail::load_be<int64_t>(p + 10);
    e.last_offset = protocol::detail::load_be<int64_t>(p + 18);
    e.last_stable_offset = protocol::detail::load_be<int64_t>(p + 26);
    out.entries.push_back(e);
  }
  return std::optional<TxnIndexContent>(std::move(out));
}

Status append_txn_index(Env* env, const std::string& path, const AbortedTxn& entry) {
  auto file = env->new_writable_file(path, /*truncate=*/false);
  if (!file.ok()) return file.status();
  const std::string bytes = encode_aborted_txns({entry});
  STRATA_RETURN_IF_ERROR(
      (*file)->append({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  STRATA_RETURN_IF_ERROR((*file)->sync());
  return (*file)->close();
}

}  // namespace strata::storage
