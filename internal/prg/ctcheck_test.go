package prg

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kord-fss/kord/internal/gentest"
)

// This file checks the generated assembly (mmo_amd64.s) for the memory and
// branch patterns that leak secrets through the cache and the branch
// predictor: a load or store whose address depends on a secret (α bits,
// seeds, control bits: everything the kernels read from memory other than
// their public arguments), a conditional branch on a secret, and any
// indexed read of a constant table (DATA/GLOBL symbols), which is where such
// a leak is easiest to write. It runs on every platform: it reads the file
// as text.

var ctFile = flag.String("ctfile", "mmo_amd64.s", "assembly file TestKernelsConstantTime checks")

// publicArgs are the kernel arguments whose values are public: pointers,
// counts, bit positions, strides, output widths. A GPR loaded from any other
// argument (say final, a key's output correction) is secret.
var publicArgs = map[string]bool{
	"k": true, "k0": true, "k1": true, "k2": true, "k3": true,
	"o0": true, "o1": true, "o2": true, "o3": true,
	"in": true, "out": true, "n": true, "quads": true, "cw": true,
	"alpha": true, "beta": true, "v": true, // pointers, not the values
	"shift": true, "stride": true, "ctrlRel": true, "ctrlShift": true,
	"mask": true,
}

// gprs maps every spelling of a general-purpose register to its index.
var gprs = func() map[string]int {
	m := map[string]int{}
	for i, names := range [][]string{
		{"AX", "AL", "AH"}, {"BX", "BL", "BH"}, {"CX", "CL", "CH"}, {"DX", "DL", "DH"},
		{"SI", "SIB"}, {"DI", "DIB"}, {"BP", "BPB"},
	} {
		for _, n := range names {
			m[n] = i
		}
	}
	for r := 8; r <= 15; r++ {
		m[fmt.Sprintf("R%d", r)] = r
		m[fmt.Sprintf("R%dB", r)] = r
	}
	return m
}()

// ctState is what the check knows before an instruction: which GPRs (bit
// i: register index i) may hold a secret, whether the flags may, and which
// GPRs may point into a constant table.
type ctState struct {
	secret, table uint32
	flags         bool
}

func (s ctState) join(o ctState) ctState {
	return ctState{s.secret | o.secret, s.table | o.table, s.flags || o.flags}
}

type ctInsn struct {
	line int
	op   string
	args []string
}

// ctFunc is one TEXT block: its instructions and where its labels point.
type ctFunc struct {
	name   string
	insns  []ctInsn
	labels map[string]int
}

type ctViolation struct {
	line       int
	fn, reason string
}

func (v ctViolation) String() string { return fmt.Sprintf("line %d (%s): %s", v.line, v.fn, v.reason) }

// ctReport is the outcome of a check: what was found and how much was
// looked at (so a test can tell a clean file from one it failed to read).
type ctReport struct {
	violations []ctViolation
	funcs      map[string]bool
	memOps     int
	tables     map[string]bool
}

var memRe = regexp.MustCompile(`^([^()]*)\(([A-Z0-9]+)\)(?:\(([A-Z0-9]+)\*[1248]\))?$`)

// ctParse splits assembly text into functions and collects the table
// symbols (every DATA or GLOBL name).
func ctParse(src string) (funcs []*ctFunc, tables map[string]bool) {
	tables = map[string]bool{}
	var cur *ctFunc
	for i, raw := range strings.Split(src, "\n") {
		line := raw
		if c := strings.Index(line, "//"); c >= 0 {
			line = line[:c]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, _ := strings.Cut(line, " ")
		switch op {
		case "DATA", "GLOBL":
			if sym, _, ok := strings.Cut(strings.TrimSpace(rest), "("); ok {
				sym, _, _ = strings.Cut(sym, "+")
				tables[sym] = true
			}
			continue
		case "TEXT":
			name, _, _ := strings.Cut(strings.TrimSpace(rest), "(")
			cur = &ctFunc{name: name, labels: map[string]int{}}
			funcs = append(funcs, cur)
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasSuffix(line, ":") && !strings.Contains(line, " ") {
			cur.labels[strings.TrimSuffix(line, ":")] = len(cur.insns)
			continue
		}
		var args []string
		if rest = strings.TrimSpace(rest); rest != "" {
			for _, a := range strings.Split(rest, ",") {
				args = append(args, strings.TrimSpace(a))
			}
		}
		cur.insns = append(cur.insns, ctInsn{line: i + 1, op: op, args: args})
	}
	return funcs, tables
}

// ctCheck checks every function of the assembly text src.
func ctCheck(src string) ctReport {
	funcs, tables := ctParse(src)
	rep := ctReport{funcs: map[string]bool{}, tables: tables}
	for _, f := range funcs {
		rep.funcs[f.name] = true
		checkFunc(f, tables, &rep)
	}
	return rep
}

// isVecOrMask reports whether a is an X, Y, Z or K register.
func isVecOrMask(a string) bool {
	if len(a) < 2 || !strings.ContainsRune("XYZK", rune(a[0])) {
		return false
	}
	for _, c := range a[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// noFlags are the GPR-writing instructions that leave the flags alone.
func noFlags(op string) bool {
	for _, p := range []string{"MOV", "LEA", "SHLX", "SHRX", "SARX", "RORX", "PDEP", "PEXT", "KMOV", "V", "SET", "CMOV", "BSWAP", "NOT"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// checkFunc runs the taint analysis of f to a fixpoint over its control
// flow (a label's state joins every path into it), then reports.
func checkFunc(f *ctFunc, tables map[string]bool, rep *ctReport) {
	n := len(f.insns)
	in := make([]ctState, n+1)
	seen := make([]bool, n+1)
	seen[0] = true
	var found map[int]ctViolation
	step := func(i int, s ctState, report bool) (ctState, []int) {
		ins := f.insns[i]
		bad := func(reason string) {
			if report {
				v := ctViolation{ins.line, f.name, reason}
				if prev, ok := found[ins.line]; ok {
					v.reason = prev.reason + "; " + reason
				}
				found[ins.line] = v
			}
		}
		// The taint of a source operand: its value, for a memory operand
		// its contents.
		taint := func(a string) (secret, table bool) {
			if r, ok := gprs[a]; ok {
				return s.secret&(1<<r) != 0, s.table&(1<<r) != 0
			}
			if strings.HasPrefix(a, "$") {
				return false, false
			}
			if isVecOrMask(a) {
				return true, false
			}
			if m := memRe.FindStringSubmatch(a); m != nil {
				if m[2] == "FP" {
					name, _, _ := strings.Cut(m[1], "+")
					return !publicArgs[name], false
				}
				return true, false
			}
			return true, false // anything unrecognised counts as secret
		}
		isLEA := strings.HasPrefix(ins.op, "LEA")
		// Every address the instruction forms must be public; a table's
		// must have no index at all.
		for _, a := range ins.args {
			m := memRe.FindStringSubmatch(a)
			if m == nil || isLEA {
				continue
			}
			if report {
				rep.memOps++
			}
			sym, _, _ := strings.Cut(m[1], "+")
			onTable := m[2] == "SB" && tables[sym]
			for _, r := range []string{m[2], m[3]} {
				if g, ok := gprs[r]; ok {
					if s.secret&(1<<g) != 0 {
						bad(fmt.Sprintf("address %s uses %s, which may hold a secret", a, r))
					}
					if r == m[2] && s.table&(1<<g) != 0 {
						onTable = true
					}
				}
			}
			if onTable && m[3] != "" {
				bad(fmt.Sprintf("constant table read %s is indexed by %s", a, m[3]))
			}
		}
		if strings.Contains(ins.op, "GATHER") || strings.Contains(ins.op, "SCATTER") {
			bad(ins.op + " forms addresses from vector data")
		}
		next := []int{i + 1}
		switch {
		case ins.op == "RET":
			return s, nil
		case ins.op == "JMP":
			if len(ins.args) == 1 {
				if t, ok := f.labels[ins.args[0]]; ok {
					return s, []int{t}
				}
			}
			bad("indirect jump")
			return s, nil
		case ins.op[0] == 'J':
			if s.flags {
				bad(ins.op + " branches on flags that may come from a secret")
			}
			if len(ins.args) == 1 {
				if t, ok := f.labels[ins.args[0]]; ok {
					next = append(next, t)
				}
			}
			return s, next
		case ins.op == "CPUID":
			for _, r := range []string{"AX", "BX", "CX", "DX"} {
				s.secret &^= 1 << gprs[r]
				s.table &^= 1 << gprs[r]
			}
			return s, next
		case strings.HasPrefix(ins.op, "MUL") || strings.HasPrefix(ins.op, "DIV") || strings.HasPrefix(ins.op, "IDIV"):
			bad(ins.op + " is not modelled (implicit AX, DX)")
		}
		if len(ins.args) == 0 {
			return s, next
		}
		dst := ins.args[len(ins.args)-1]
		d, dstGPR := gprs[dst]
		var sec, tab bool
		srcs := ins.args[:len(ins.args)-1]
		switch {
		case isLEA:
			if m := memRe.FindStringSubmatch(ins.args[0]); m != nil {
				sym, _, _ := strings.Cut(m[1], "+")
				tab = m[2] == "SB" && tables[sym]
				for _, r := range []string{m[2], m[3]} {
					if g, ok := gprs[r]; ok {
						sec = sec || s.secret&(1<<g) != 0
						tab = tab || (r == m[2] && s.table&(1<<g) != 0)
					}
				}
			}
			srcs = nil
		case len(ins.args) == 2 && ins.args[0] == dst && strings.HasPrefix(ins.op, "XOR"):
			srcs = nil // XOR r, r: zero
		case len(ins.args) <= 2 && !strings.HasPrefix(ins.op, "MOV") && !strings.HasPrefix(ins.op, "VMOV") && !strings.HasPrefix(ins.op, "KMOV"):
			srcs = ins.args // read-modify-write
		}
		for _, a := range srcs {
			as, at := taint(a)
			sec, tab = sec || as, tab || at
		}
		if strings.HasPrefix(ins.op, "CMOV") || strings.HasPrefix(ins.op, "SET") {
			sec = sec || s.flags
		}
		switch {
		case strings.HasPrefix(ins.op, "CMP") || strings.HasPrefix(ins.op, "TEST") || strings.HasPrefix(ins.op, "BT"):
			s.flags = false
			for _, a := range ins.args {
				as, _ := taint(a)
				s.flags = s.flags || as
			}
			return s, next
		case strings.HasPrefix(ins.op, "PTEST") || strings.HasPrefix(ins.op, "VPTEST") && !strings.HasPrefix(ins.op, "VPTESTM") && !strings.HasPrefix(ins.op, "VPTESTNM") ||
			strings.HasPrefix(ins.op, "KORTEST") || strings.HasPrefix(ins.op, "KTEST") ||
			strings.Contains(ins.op, "COMIS"):
			s.flags = true
			return s, next
		}
		if !dstGPR {
			return s, next
		}
		s.secret &^= 1 << d
		s.table &^= 1 << d
		if sec {
			s.secret |= 1 << d
		}
		if tab {
			s.table |= 1 << d
		}
		if !noFlags(ins.op) {
			s.flags = sec
		}
		return s, next
	}
	// Fixpoint: states only grow, so this ends.
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			if !seen[i] {
				continue
			}
			out, next := step(i, in[i], false)
			for _, j := range next {
				if j > n {
					continue
				}
				if nj := in[j].join(out); !seen[j] || nj != in[j] {
					in[j], seen[j], changed = nj, true, true
				}
			}
		}
	}
	found = map[int]ctViolation{}
	for i := 0; i < n; i++ {
		if seen[i] {
			step(i, in[i], true)
		}
	}
	for i := 0; i < n; i++ {
		if v, ok := found[f.insns[i].line]; ok {
			rep.violations = append(rep.violations, v)
			delete(found, f.insns[i].line)
		}
	}
}

// TestKernelsConstantTime checks mmo_amd64.s (or -ctfile): no address a
// kernel forms and no branch it takes may depend on a secret, and constant
// tables are read at fixed offsets only.
func TestKernelsConstantTime(t *testing.T) {
	src, err := os.ReadFile(*ctFile)
	if err != nil {
		t.Fatal(err)
	}
	rep := ctCheck(string(src))
	for _, v := range rep.violations {
		t.Error(v)
	}
	// Guard against a check that passes by reading nothing.
	if rep.memOps < 5000 {
		t.Errorf("checked %d memory operands: the parser missed the kernels", rep.memOps)
	}
	for _, fn := range []string{"·vaesDPFGenLevel", "·vaesDPFGenFirst", "·vaes512DPFGenLevel",
		"·vaes512DPFGenFirst", "·vaesDCFValues8", "·vaesTree", "·vaesTreeLeaves1M", "·vaes512MMO4"} {
		if !rep.funcs[fn] {
			t.Errorf("kernel %s not found", fn)
		}
	}
	for _, sym := range []string{"genOne<>", "treeNotOne<>", "zmmTab<>"} {
		if !rep.tables[sym] {
			t.Errorf("table %s not found", sym)
		}
	}
}

// TestCTCheckFlags feeds the check small kernels with and without the
// leaks it must catch, so a check that stops catching them fails.
func TestCTCheckFlags(t *testing.T) {
	const head = "DATA genTab<>+0(SB)/8, $0\nGLOBL genTab<>(SB), RODATA|NOPTR, $64\nTEXT ·f(SB), NOSPLIT, $0-72\n" +
		"\tMOVQ alpha+24(FP), R8\n\tMOVQ shift+32(FP), R11\n\tMOVQ quads+8(FP), SI\n\tMOVQ out+40(FP), DI\n\tMOVQ n+16(FP), DX\n"
	for _, c := range []struct {
		name, body string
		bad        bool
	}{
		{"old α-indexed lane mask", "\tSHRXQ R11, (R8), CX\n\tANDL $1, CX\n\tLEAL (CX)(CX*2), R9\n\tSHLL $5, R9\n\tLEAQ genTab<>(SB), BX\n\tVMOVDQU 64(BX)(R9*1), Y10\n", true},
		{"SB table indexed by a secret", "\tMOVBLZX (SI), SI\n\tVMOVDQU genTab<>+64(SB)(SI*1), Y1\n", true},
		{"table indexed by a public count", "\tVMOVDQU genTab<>(SB)(DX*1), Y1\n", true},
		{"secret base pointer", "\tMOVQ (R8), R9\n\tMOVQ (R9), AX\n", true},
		{"vector data to an index", "\tVMOVMSKPD Y0, R9\n\tMOVB AX, (DI)(R9*1)\n", true},
		{"secret argument", "\tMOVQ final+40(FP), R9\n\tMOVQ (DI)(R9*8), AX\n", true},
		{"secret through a loop", "\tMOVQ stride+48(FP), R9\nf_loop:\n\tVMOVDQU Y0, (DI)(R9*1)\n\tMOVBLZX (SI), R9\n\tSUBQ $1, DX\n\tJMP f_loop\n", true},
		{"branch on a secret", "\tMOVBLZX (SI), CX\n\tCMPQ CX, $1\n\tJB f_done\n\tNOP\nf_done:\n\tRET\n", true},
		{"gather", "\tVPGATHERQQ Y1, (SI)(Y2*8), Y3\n", true},
		{"public stride and fixed table offset", "\tMOVQ stride+48(FP), R9\n\tLEAQ genTab<>(SB), BX\n\tVMOVDQU 32(BX), Y1\n\tVMOVDQU genTab<>+32(SB), Y2\n" +
			"\tSHRXQ R11, (R8), CX\n\tANDL $1, CX\n\tNEGQ CX\n\tVMOVQ CX, X3\n\tVPAND Y1, Y3, Y3\n\tMOVQ CX, R9\n\tMOVQ stride+48(FP), R9\n" +
			"\tVMOVDQU Y3, (DI)(R9*1)\nf_loop:\n\tCMPQ DX, $2\n\tJB f_end\n\tADDQ R9, DI\n\tSUBQ $2, DX\n\tJMP f_loop\nf_end:\n\tRET\n", false},
	} {
		rep := ctCheck(head + c.body)
		if got := len(rep.violations) > 0; got != c.bad {
			t.Errorf("%s: flagged %v, want %v (%v)", c.name, got, c.bad, rep.violations)
		}
	}
}

// TestGeneratedAssemblyCurrent regenerates mmo_amd64.s and compares, so
// TestKernelsConstantTime's verdict holds for the generator too.
func TestGeneratedAssemblyCurrent(t *testing.T) {
	gentest.Current(t, "./_asm/gen.go", "mmo_amd64.s")
}
