package client

import (
	"testing"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestAlphaReusable: the client answers from the one table of classes;
// the classes that follow an opened frame, and unknown ones, spend α.
func TestAlphaReusable(t *testing.T) {
	for _, c := range pb.Classes {
		if got := (&ReplyError{Class: c.Class}).AlphaReusable(); got != c.AlphaReusable {
			t.Errorf("%s: AlphaReusable %v, table says %v", c.Class, got, c.AlphaReusable)
		}
	}
	for class, want := range map[string]bool{pb.ClassTampered: false, pb.ClassSpent: false, "some future class": false,
		pb.ClassMismatch: true, pb.ClassPeer: true, pb.ClassBadRequest: true} {
		if got := (&ReplyError{Class: class}).AlphaReusable(); got != want {
			t.Errorf("%q: AlphaReusable %v, want %v", class, got, want)
		}
	}
}
