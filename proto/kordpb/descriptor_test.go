package kordpb

import (
	"context"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/kord-fss/kord/proto/modulepb"
)

// TestGeneratedCodeMatchesProto compiles the .proto files (in Go, so a
// fresh clone without protoc runs it) and compares each one's descriptor
// with the one compiled into the generated package. A .proto edited
// without go generate, or a *.pb.go edited by hand, fails here.
func TestGeneratedCodeMatchesProto(t *testing.T) {
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{".."}})}
	files, err := c.Compile(context.Background(), "kord/v1/service.proto", "kord/v1/module.proto")
	if err != nil {
		t.Fatalf("compiling the .proto files: %v", err)
	}
	generated := map[string]protoreflect.FileDescriptor{
		"kord/v1/service.proto": File_kord_v1_service_proto,
		"kord/v1/module.proto":  modulepb.File_kord_v1_module_proto,
	}
	for _, f := range files {
		want := protodesc.ToFileDescriptorProto(f)
		got := protodesc.ToFileDescriptorProto(generated[f.Path()])
		for _, d := range []*descriptorpb.FileDescriptorProto{want, got} {
			d.SourceCodeInfo = nil
		}
		if !proto.Equal(got, want) {
			t.Errorf("%s: the generated package's descriptor differs from the .proto file's: run go generate ./proto/...", f.Path())
		}
	}
}
