// Internal to protocol/schema: the parsed form behind a ProtobufSchema, shared by the schema,
// its diff and the value codec. Not part of the module's interface.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>

#include <memory>
#include <vector>

namespace strata::protocol::schema::detail {

struct ProtoFile {
  // Declared before `factory`: the factory's prototypes point into the pool.
  std::unique_ptr<google::protobuf::DescriptorPool> pool;
  // The schema's file in `pool`.
  const google::protobuf::FileDescriptor* file = nullptr;
  // The file and everything it imports, imports first, as the pool knows them (a referencing
  // schema builds its own pool from these).
  std::vector<google::protobuf::FileDescriptorProto> protos;
  // Prototypes of the file's messages, for decoding values; thread-safe.
  mutable google::protobuf::DynamicMessageFactory factory;
};

}  // namespace strata::protocol::schema::detail
