package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// healthHandlers adds a party's probes to mux (on the --metrics listener,
// beside /metrics), for an orchestrator's liveness and readiness checks:
//
//   - /healthz answers 200 while the party process serves (liveness);
//   - /readyz answers 200 when the party can deliver keys: its module
//     answers and is paired, and the peer session is up; else 503. Its
//     body is a record in the form of the readiness line
//     ({"ready":true|false,...}): party, paired, peer, module, and why
//     when not ready.
//
// status is the party's own Status.
func healthHandlers(mux *http.ServeMux, party int, status func(context.Context) (*pb.StatusReply, error)) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ready":true,"live":true}` + "\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		rec := readiness(ctx, party, status)
		w.Header().Set("Content-Type", "application/json")
		if !rec.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rec)
	})
}

// readyRecord is /readyz's body.
type readyRecord struct {
	Ready  bool   `json:"ready"`
	Party  int    `json:"party"`
	Module bool   `json:"module"` // the module answers
	Paired bool   `json:"paired"`
	Peer   bool   `json:"peer"` // the peer session is up
	Why    string `json:"why,omitempty"`
}

// readiness asks the party for its status and says whether it can
// deliver keys.
func readiness(ctx context.Context, party int, status func(context.Context) (*pb.StatusReply, error)) readyRecord {
	rec := readyRecord{Party: party}
	st, err := status(ctx)
	if err != nil {
		rec.Why = "the party does not answer its status"
		return rec
	}
	rec.Module, rec.Paired, rec.Peer = st.Module != nil, st.Paired, st.PeerConnected
	switch {
	case !rec.Module:
		rec.Why = "the module does not answer"
	case !rec.Paired:
		rec.Why = "the module is not paired (run kord pair once)"
	case !rec.Peer:
		rec.Why = "no peer session"
	default:
		rec.Ready = true
	}
	return rec
}
