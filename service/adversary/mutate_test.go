package adversary

import (
	"math/rand/v2"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// A field rewrite: rewrite picks one field of a peer message (any depth,
// set or not, list elements included) and changes it; path names it,
// e.g. ".batch_reply.digest" or ".hello_reply.recent.item.id".
type edit struct {
	path  string
	apply func()
}

// rewrite changes one field of m that allowed accepts, at random; it
// returns the field's path ("" when no field was allowed).
func rewrite(r *rand.Rand, m *pb.PeerMsg, allowed func(path string) bool) string {
	var es []edit
	collect(r, m.ProtoReflect(), "", allowed, &es)
	if len(es) == 0 {
		return ""
	}
	e := es[r.IntN(len(es))]
	e.apply()
	return e.path
}

var classes = []string{"", "spent", "unmatched", "tampered", "void", "desync", "mismatch", "peer", "bad_request", "no such class"}

// collect lists the edits of msg's fields.
func collect(r *rand.Rand, m protoreflect.Message, path string, allowed func(string) bool, es *[]edit) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m.WhichOneof(od) != fd {
			continue // another member of the oneof is the message
		}
		p := path + "." + string(fd.Name())
		if !allowed(p) {
			continue
		}
		switch {
		case fd.IsMap():
		case fd.IsList():
			listEdits(r, m, fd, p, allowed, es)
		case fd.Kind() == protoreflect.MessageKind:
			if !m.Has(fd) {
				continue
			}
			*es = append(*es, edit{p + "(clear)", func() { m.Clear(fd) }})
			collect(r, m.Mutable(fd).Message(), p, allowed, es)
		default:
			*es = append(*es, edit{p, func() { m.Set(fd, scalar(r, fd, m.Get(fd))) }})
		}
	}
}

func listEdits(r *rand.Rand, m protoreflect.Message, fd protoreflect.FieldDescriptor, p string, allowed func(string) bool, es *[]edit) {
	if !m.Has(fd) {
		if fd.Kind() != protoreflect.MessageKind {
			*es = append(*es, edit{p + "(add)", func() {
				l := m.Mutable(fd).List()
				l.Append(scalar(r, fd, zero(fd.Kind())))
			}})
		}
		return
	}
	l := m.Mutable(fd).List()
	*es = append(*es, edit{p + "(drop)", func() {
		k := r.IntN(l.Len())
		for j := k; j+1 < l.Len(); j++ {
			l.Set(j, l.Get(j+1))
		}
		l.Truncate(l.Len() - 1)
	}}, edit{p + "(repeat)", func() { l.Append(l.Get(r.IntN(l.Len()))) }})
	if l.Len() > 1 {
		*es = append(*es, edit{p + "(swap)", func() {
			a, b := r.IntN(l.Len()), r.IntN(l.Len())
			va, vb := l.Get(a), l.Get(b)
			l.Set(a, vb)
			l.Set(b, va)
		}})
	}
	k := r.IntN(l.Len())
	if fd.Kind() == protoreflect.MessageKind {
		collect(r, l.Get(k).Message(), p, allowed, es)
		return
	}
	*es = append(*es, edit{p + "[]", func() { l.Set(k, scalar(r, fd, l.Get(k))) }})
}

// scalar returns another value for a scalar field of kind fd.Kind().
func scalar(r *rand.Rand, fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(intEdit(r, v.Uint()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(intEdit(r, v.Uint())))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(intEdit(r, uint64(v.Int()))))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(intEdit(r, uint64(v.Int()))))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(classes[r.IntN(len(classes))])
	case protoreflect.BytesKind:
		b := append([]byte(nil), v.Bytes()...)
		switch {
		case len(b) == 0 || r.IntN(4) == 0:
			b = make([]byte, []int{0, 1, 16, 32}[r.IntN(4)])
			for i := range b {
				b[i] = byte(r.Uint32())
			}
		case r.IntN(3) == 0:
			b = b[:r.IntN(len(b))]
		default:
			b[r.IntN(len(b))] ^= 1 << r.IntN(8)
		}
		return protoreflect.ValueOfBytes(b)
	}
	return v
}

// zero is the zero value of a scalar kind.
func zero(k protoreflect.Kind) protoreflect.Value {
	switch k {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(false)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(0)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(0)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(0)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("")
	}
	return protoreflect.ValueOfBytes(nil)
}

func intEdit(r *rand.Rand, x uint64) uint64 {
	switch r.IntN(6) {
	case 0:
		return x + 1
	case 1:
		return x - 1
	case 2:
		return 0
	case 3:
		return x ^ 1<<r.IntN(64)
	case 4:
		return x + uint64(r.IntN(64))
	}
	return r.Uint64()
}

// gate names the mutation classes of attacks that are still open
// (attacks_test.go), by the fields and messages they act through, and
// says whether path (for the honest party honest) belongs to one.
func gate(honest int, path string) string {
	if !knownOpen {
		return ""
	}
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(path, p) {
				return true
			}
		}
		return false
	}
	switch {
	// Recovery records on the peer's word (issue 33): the honest party
	// re-delivers what the peer's record names.
	case honest == 0 && has(".hello_reply.recent", ".hello_reply.fresh"):
		return recoveryAttack
	case honest == 1 && has(".witness.recent", ".witness.held_ok", ".witness.held_void", ".hello.run"):
		return recoveryAttack
	// Party 1 delivers on party 0's word (issue 32, item 2): a forged
	// confirmation, or a hello naming a batch party 0 never confirmed.
	case honest == 1 && has(".confirm.ok", ".confirm.seq", ".hello.delivered_through"):
		return confirmAttack
	}
	return ""
}
