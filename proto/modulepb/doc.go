// Package modulepb holds the generated protobuf code of the module socket
// protocol (proto/kord/v1/module.proto). It has no gRPC: the module daemon
// speaks length-prefixed protobuf over a Unix socket.
package modulepb

//go:generate protoc -I .. --go_out=. --go_opt=module=github.com/kord-fss/kord/proto/modulepb kord/v1/module.proto
