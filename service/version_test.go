package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestPeerVersionRefused: party 1 answers a hello of another peer
// protocol version (an older party's 0, or a later one) with its own
// version and nothing else, and ends the session; the message names both
// versions and what to do.
func TestPeerVersionRefused(t *testing.T) {
	mods := killableModules(t)
	s1 := startParty1(t, "", mods[1], Config{}, func(ss grpc.ServerStream) grpc.ServerStream { return ss })
	conn, err := grpc.NewClient(s1.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(pb.Codec())))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, v := range []uint32{0, ProtocolVersion + 1} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := pb.NewPeerLinkClient(conn).Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.PeerMsg{M: &pb.PeerMsg_Hello{Hello: &pb.Hello{Run: 1, Challenge: make([]byte, 32), Version: v}}}); err != nil {
			t.Fatal(err)
		}
		m, err := st.Recv()
		if err != nil || m.GetHelloReply().GetVersion() != ProtocolVersion || len(m.GetHelloReply().GetWitness()) != 0 {
			t.Fatalf("version %d: reply %v, %v", v, m, err)
		}
		if _, err := st.Recv(); err == nil {
			t.Fatalf("version %d: the session went on", v)
		}
		cancel()
	}
	for v, want := range map[uint32]string{0: "before protocol versions", 7: "version 7"} {
		err := checkVersion(v)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Upgrading a pair") {
			t.Errorf("checkVersion(%d): %v", v, err)
		}
	}
	if checkVersion(ProtocolVersion) != nil {
		t.Error("this version refused")
	}
}
