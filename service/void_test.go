package service

import "testing"

// TestVoidReportsBounded: reports put back after a broken session, with
// new ones beside them, can pass the most a peer takes in one report
// (peerVoid drops a longer one whole); takeVoid hands them out in reports
// of at most maxSpentLog ids, every id once, the ones put back first.
func TestVoidReportsBounded(t *testing.T) {
	p := &Party{}
	p.voids.kick = make(chan struct{}, 1)
	sent := make([]rid, maxSpentLog)
	for i := range sent {
		sent[i] = rid{id: uint64(i)}
	}
	p.voidsSent(sent)
	for i := range 10 {
		p.addVoid(rid{app: "a", id: uint64(i)})
	}
	p.voidsUnread()
	seen := map[rid]bool{}
	var order []rid
	for reports := 0; ; reports++ {
		woken := false
		select {
		case <-p.voids.kick:
			woken = true
		default:
		}
		v := p.takeVoid()
		if len(v) == 0 {
			if reports != 2 || woken {
				t.Fatalf("%d reports (want 2), then woken %v", reports, woken)
			}
			break
		}
		if !woken {
			t.Fatalf("report %d: the void sender was not woken for it", reports)
		}
		if len(v) > maxSpentLog {
			t.Fatalf("a report of %d ids (at most %d)", len(v), maxSpentLog)
		}
		for _, r := range v {
			if seen[r] {
				t.Fatalf("id %v reported twice", r)
			}
			seen[r] = true
			order = append(order, r)
		}
	}
	if len(seen) != maxSpentLog+10 || order[0] != (rid{id: 0}) || order[len(order)-1] != (rid{app: "a", id: 9}) {
		t.Fatalf("%d ids reported, first %v, last %v", len(seen), order[0], order[len(order)-1])
	}
}
