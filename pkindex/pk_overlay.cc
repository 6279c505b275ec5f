#include "pkindex/pk_overlay.h"

#include <string>

namespace strata::pkindex {

uint64_t Overlay::push(Batch batch) {
  batch.id = next_id_++;
  batch.base_offset = -1;
  batches_.push_back(std::move(batch));
  return batches_.back().id;
}

Status Overlay::appended(uint64_t id, int64_t base_offset) {
  if (batches_.empty() || batches_.back().id != id || batches_.back().is_appended()) {
    return Status(Errc::invalid_argument,
                  "overlay: batch " + std::to_string(id) + " is not the newest unappended batch");
  }
  const int64_t end = appended_end();
  if (base_offset < 0 || (end >= 0 && base_offset < end)) {
    return Status(Errc::invalid_argument, "overlay: base offset " + std::to_string(base_offset) +
                                              " does not follow " + std::to_string(end));
  }
  batches_.back().base_offset = base_offset;
  return Status::Ok();
}

void Overlay::rollback(uint64_t id) {
  for (auto it = batches_.begin(); it != batches_.end(); ++it) {
    if (it->id == id) {
      batches_.erase(it, batches_.end());
      return;
    }
  }
}

const Overlay::Row* Overlay::find(const std::string& key) const {
  for (auto b = batches_.rbegin(); b != batches_.rend(); ++b) {
    if (auto it = b->rows.find(key); it != b->rows.end()) return &it->second;
  }
  return nullptr;
}

Overlay::Batch* Overlay::ready(int64_t offset) {
  if (batches_.empty()) return nullptr;
  Batch& b = batches_.front();
  return b.is_appended() && b.last_offset() <= offset ? &b : nullptr;
}

int64_t Overlay::appended_end() const {
  for (auto b = batches_.rbegin(); b != batches_.rend(); ++b) {
    if (b->is_appended()) return b->last_offset() + 1;
  }
  return -1;
}

}  // namespace strata::pkindex
