// Status and Result<T>: the error-return types used inside every Strata module.
//
// Kafka error codes are chosen only in broker/; modules below it report a module-neutral
// `Errc` plus a human-readable message. Exceptions are reserved for a broken connection
// (see protocol/wire/reader.h), so fallible module calls return Status or Result<T>.
// Value types; thread-compatible.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace strata {

enum class Errc {
  ok = 0,
  io_error,    // a file operation failed for good (EIO, any failed fsync, an unclassified errno)
  corruption,  // bytes on disk or on the wire fail validation (CRC, length, magic)
  not_found,   // no such file, topic, partition or offset
  already_exists,
  invalid_argument,  // a caller-supplied value is out of range or malformed
  out_of_range,      // an offset outside [log start, log end]
  unsupported,       // a valid request for a feature Strata lacks (e.g. an unknown codec)
  too_large,         // a size limit was exceeded
  shutting_down,
  no_space,     // the device or quota is full (ENOSPC, EDQUOT): retry once space is freed
  unavailable,  // a transient shortage (EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR): retry soon
  busy,         // held by another writer (a key in an open transaction): retry once it ends
};

const char* errc_name(Errc e);

class Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Errc::ok; }
  explicit operator bool() const { return ok(); }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const {
    return ok() ? "ok" : std::string(errc_name(code_)) + ": " + message_;
  }

 private:
  Errc code_ = Errc::ok;
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  Result(Errc code, std::string message) : v_(Status(code, std::move(message))) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }

 private:
  std::variant<T, Status> v_;
};

inline const char* errc_name(Errc e) {
  switch (e) {
    case Errc::ok:
      return "ok";
    case Errc::io_error:
      return "io_error";
    case Errc::corruption:
      return "corruption";
    case Errc::not_found:
      return "not_found";
    case Errc::already_exists:
      return "already_exists";
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::out_of_range:
      return "out_of_range";
    case Errc::unsupported:
      return "unsupported";
    case Errc::too_large:
      return "too_large";
    case Errc::shutting_down:
      return "shutting_down";
    case Errc::no_space:
      return "no_space";
    case Errc::unavailable:
      return "unavailable";
    case Errc::busy:
      return "busy";
  }
  return "unknown";
}

}  // namespace strata

// Propagates a non-ok Status from an expression returning Status.
#define STRATA_RETURN_IF_ERROR(expr) \
  do {                               \
    ::strata::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)
