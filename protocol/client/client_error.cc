#include "protocol/client/client_error.h"

namespace strata::client {

Status kafka_status(int16_t code, std::string_view context, std::string_view detail) {
  const auto ec = static_cast<protocol::ErrorCode>(code);
  Errc errc = Errc::invalid_argument;
  switch (ec) {
    case protocol::ErrorCode::unknown_topic_or_partition:
    case protocol::ErrorCode::unknown_topic_id:
    case protocol::ErrorCode::group_id_not_found:
    case protocol::ErrorCode::resource_not_found:
      errc = Errc::not_found;
      break;
    case protocol::ErrorCode::topic_already_exists:
    case protocol::ErrorCode::duplicate_resource:
      errc = Errc::already_exists;
      break;
    case protocol::ErrorCode::offset_out_of_range:
      errc = Errc::out_of_range;
      break;
    case protocol::ErrorCode::message_too_large:
    case protocol::ErrorCode::record_list_too_large:
      errc = Errc::too_large;
      break;
    default:
      break;
  }
  const char* name =
      protocol::error_from_code(code) ? protocol::error_name(ec) : "UNKNOWN_ERROR_CODE";
  std::string msg = name;
  if (!protocol::error_from_code(code)) {
    msg += '(';
    msg += std::to_string(code);
    msg += ')';
  }
  if (!context.empty()) msg += ": " + std::string(context);
  if (!detail.empty()) msg += ": " + std::string(detail);
  return Status(errc, std::move(msg));
}

Status connection_status(std::string_view what) {
  return Status(Errc::io_error, "CONNECTION: " + std::string(what));
}

std::string error_name_of(const Status& s) {
  if (s.ok()) return "";
  const std::string& m = s.message();
  const size_t colon = m.find(':');
  std::string head = colon == std::string::npos ? m : m.substr(0, colon);
  const size_t paren = head.find('(');
  if (paren != std::string::npos) head.resize(paren);
  return head;
}

}  // namespace strata::client
