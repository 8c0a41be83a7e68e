package ctcheck

import "testing"

// head is a table and the start of a function whose arguments are loaded
// as the kernels load theirs.
const head = "DATA genTab<>+0(SB)/8, $0\nGLOBL genTab<>(SB), RODATA|NOPTR, $64\nTEXT ·f(SB), NOSPLIT, $0-72\n" +
	"\tMOVQ alpha+24(FP), R8\n\tMOVQ shift+32(FP), R11\n\tMOVQ quads+8(FP), SI\n\tMOVQ out+40(FP), DI\n\tMOVQ n+16(FP), DX\n"

// TestSeededVariants feeds the check small kernels with and without the
// leaks it must catch, so a check that stops catching them fails.
func TestSeededVariants(t *testing.T) {
	for _, c := range []struct {
		name, body string
		bad        bool
	}{
		// Leaks.
		{"secret-indexed load", "\tMOVBLZX (SI), CX\n\tMOVQ (DI)(CX*8), AX\n", true},
		{"secret branch", "\tMOVBLZX (SI), CX\n\tCMPQ CX, $1\n\tJB f_done\n\tNOP\nf_done:\n\tRET\n", true},
		{"old α-indexed lane mask", "\tSHRXQ R11, (R8), CX\n\tANDL $1, CX\n\tLEAL (CX)(CX*2), R9\n\tSHLL $5, R9\n\tLEAQ genTab<>(SB), BX\n\tVMOVDQU 64(BX)(R9*1), Y10\n", true},
		{"SB table indexed by a secret", "\tMOVBLZX (SI), SI\n\tVMOVDQU genTab<>+64(SB)(SI*1), Y1\n", true},
		{"table indexed by a public count", "\tVMOVDQU genTab<>(SB)(DX*1), Y1\n", true},
		{"secret base pointer", "\tMOVQ (R8), R9\n\tMOVQ (R9), AX\n", true},
		{"vector data to an index", "\tVMOVMSKPD Y0, R9\n\tMOVB AX, (DI)(R9*1)\n", true},
		{"secret through a loop", "\tMOVQ stride+48(FP), R9\nf_loop:\n\tVMOVDQU Y0, (DI)(R9*1)\n\tMOVBLZX (SI), R9\n\tSUBQ $1, DX\n\tJMP f_loop\n", true},
		{"gather", "\tVPGATHERQQ Y1, (SI)(Y2*8), Y3\n", true},
		{"argument used as data, then as an index", "\tMOVQ final+56(FP), R9\n\tVMOVQ R9, X1\n\tMOVQ (DI)(R9*8), AX\n", true},
		{"argument combined with a secret, reloaded as an index", "\tMOVQ v+48(FP), R9\n\tXORQ (SI), R9\n\tMOVQ v+48(FP), R10\n\tMOVQ (DI)(R10*8), AX\n", true},
		{"argument stored as data, then a branch on it", "\tMOVQ v+48(FP), R9\n\tMOVQ R9, (DI)\n\tCMPQ R9, $0\n\tJZ f_end\n\tNOP\nf_end:\n\tRET\n", true},
		{"ALU op on memory sets the flags from loaded data", "\tADDQ $1, (SI)\n\tJZ f_end\n\tNOP\nf_end:\n\tRET\n", true},
		{"OR into memory, then a branch", "\tORB $1, (DI)\n\tJNZ f_end\n\tNOP\nf_end:\n\tRET\n", true},
		{"XCHG moves a secret into a pointer", "\tMOVQ (SI), R9\n\tXCHGQ R9, DI\n\tMOVQ (DI), AX\n", true},
		{"XCHG with memory loads a secret", "\tXCHGQ R9, (SI)\n\tMOVQ (DI)(R9*1), AX\n", true},
		{"POP of an unmodelled stack value", "\tPOPQ R9\n\tMOVQ (DI)(R9*1), AX\n", true},
		{"CQO spreads a secret sign to DX", "\tMOVQ (SI), AX\n\tCQO\n\tMOVQ (DI)(DX*8), BX\n", true},
		{"CMPXCHG compares a secret", "\tMOVQ (SI), AX\n\tCMPXCHGQ CX, (DI)\n\tJZ f_end\n\tNOP\nf_end:\n\tRET\n", true},
		{"a call clobbers the pointers", "\tCALL ·g(SB)\n\tMOVQ (DI), AX\n", true},
		{"indirect call", "\tCALL R9\n", true},
		{"indirect jump", "\tJMP (R9)\n", true},
		// Clean.
		{"public stride and fixed table offset", "\tMOVQ stride+48(FP), R9\n\tLEAQ genTab<>(SB), BX\n\tVMOVDQU 32(BX), Y1\n\tVMOVDQU genTab<>+32(SB), Y2\n" +
			"\tSHRXQ R11, (R8), CX\n\tANDL $1, CX\n\tNEGQ CX\n\tVMOVQ CX, X3\n\tVPAND Y1, Y3, Y3\n\tMOVQ CX, R9\n\tMOVQ stride+48(FP), R9\n" +
			"\tVMOVDQU Y3, (DI)(R9*1)\nf_loop:\n\tCMPQ DX, $2\n\tJB f_end\n\tADDQ R9, DI\n\tSUBQ $2, DX\n\tJMP f_loop\nf_end:\n\tRET\n", false},
		{"pointers by role, whatever their names", "\tMOVQ ks+0(FP), R9\n\tMOVQ buf+8(FP), R10\n\tMOVQ cnt+16(FP), R12\n\tMOVOU (R9), X0\n\tMOVOU X0, (R10)(R12*1)\n" +
			"\tDECQ R12\n\tJNZ f_end\n\tNOP\nf_end:\n\tRET\n", false},
		{"an argument used only as an index is public", "\tMOVQ final+56(FP), R9\n\tMOVQ (DI)(R9*8), AX\n", false},
		{"XCHG of two pointers", "\tXCHGQ DI, SI\n\tMOVQ (DI), AX\n\tMOVQ (SI), BX\n", false},
		{"CQO of a public count", "\tMOVQ n+16(FP), AX\n\tCQO\n\tMOVQ (DI)(DX*8), BX\n", false},
		{"reload after a call", "\tCALL ·g(SB)\n\tMOVQ out+40(FP), DI\n\tMOVQ (DI), AX\n", false},
		{"flags reset by a public compare after a memory op", "\tADDQ $1, (SI)\n\tCMPQ DX, $0\n\tJZ f_end\n\tNOP\nf_end:\n\tRET\n", false},
	} {
		rep := Check(head + c.body)
		if got := len(rep.Violations) > 0; got != c.bad {
			t.Errorf("%s: flagged %v, want %v (%v)", c.name, got, c.bad, rep.Violations)
		}
	}
}

// TestRoleNotName: the arguments found used as data are named, whatever
// they are called; pointers and counts are not.
func TestRoleNotName(t *testing.T) {
	rep := Check(head + "\tMOVQ mask+56(FP), R9\n\tVPBROADCASTQ R9, Y1\n\tMOVQ k+0(FP), R10\n\tMOVOU (R10), X0\n")
	if got := rep.DataArgs["·f"]; len(got) != 1 || got[0] != "mask" {
		t.Fatalf("data arguments %v, want [mask]", got)
	}
}

// FuzzCheck: any text is checked without a panic, and a function found is
// reported as one.
func FuzzCheck(f *testing.F) {
	f.Add(head + "\tMOVBLZX (SI), CX\n\tMOVQ (DI)(CX*8), AX\n")
	f.Add("TEXT ·g(SB), $0\nl:\n\tXCHGQ AX, (BX)(CX*2)\n\tCMPXCHGQ AX, BX\n\tJMP l\n\tCALL (AX)\n\tPOPQ\n\tCQO\n")
	f.Add("TEXT x\n\t,\n\tJ\n\tMOVQ a+(FP), (FP)\n")
	f.Fuzz(func(t *testing.T, src string) {
		rep := Check(src)
		for _, v := range rep.Violations {
			if !rep.Funcs[v.Func] {
				t.Fatalf("finding in unknown function %q", v.Func)
			}
		}
	})
}
