// Package kordpb holds the generated protobuf and gRPC code of the party
// services (proto/kord/v1/service.proto): KeySource for applications and
// PeerLink between the two parties.
package kordpb

//go:generate protoc -I .. --go_out=. --go_opt=module=github.com/kord-fss/kord/proto/kordpb --go_opt=Mkord/v1/module.proto=github.com/kord-fss/kord/proto/modulepb --go-grpc_out=. --go-grpc_opt=module=github.com/kord-fss/kord/proto/kordpb --go-grpc_opt=Mkord/v1/module.proto=github.com/kord-fss/kord/proto/modulepb kord/v1/service.proto
