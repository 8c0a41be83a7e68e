package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	pb "github.com/kord-fss/kord/proto/kordpb"
	modulepb "github.com/kord-fss/kord/proto/modulepb"
)

// TestReadyz: /readyz is 200 only for a party whose module answers, is
// paired and has a peer session, and its record names what is missing;
// /healthz is 200 throughout.
func TestReadyz(t *testing.T) {
	for _, c := range []struct {
		st    *pb.StatusReply
		err   error
		code  int
		ready bool
		why   string
	}{
		{&pb.StatusReply{Module: &modulepb.PollResponse{}, Paired: true, PeerConnected: true}, nil, 200, true, ""},
		{&pb.StatusReply{Module: &modulepb.PollResponse{}, Paired: true}, nil, 503, false, "no peer session"},
		{&pb.StatusReply{Module: &modulepb.PollResponse{}, PeerConnected: true}, nil, 503, false, "the module is not paired (run kord pair once)"},
		{&pb.StatusReply{PeerConnected: true}, nil, 503, false, "the module does not answer"},
		{nil, errors.New("boom"), 503, false, "the party does not answer its status"},
	} {
		mux := http.NewServeMux()
		healthHandlers(mux, 1, func(context.Context) (*pb.StatusReply, error) { return c.st, c.err })
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		var rec readyRecord
		if err := json.Unmarshal(w.Body.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.code || rec.Ready != c.ready || rec.Why != c.why || rec.Party != 1 {
			t.Errorf("status %+v / %v: %d %+v, want %d ready=%v %q", c.st, c.err, w.Code, rec, c.code, c.ready, c.why)
		}
		w = httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != 200 {
			t.Errorf("/healthz: %d", w.Code)
		}
	}
}
