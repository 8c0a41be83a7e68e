// Package ctcheck checks Go amd64 assembly for the memory and branch
// patterns that leak secrets through the cache and the branch predictor:
// a load or store whose address depends on a secret, a conditional branch
// on a secret, an indirect jump or call, and any indexed read of a
// constant table (DATA/GLOBL symbols), where such a leak is easiest to
// write. It reads the file as text, so its tests run on every platform.
//
// Public or secret is decided by a value's role, not by its name. A
// kernel's arguments (read from FP) are the pointers, lengths and counters
// its Go caller passes: public, unless the kernel uses an argument as data
// — moves it into a vector or mask register, stores it to memory, or
// combines it with a secret — in which case it is secret everywhere in
// that kernel (a second pass). Everything loaded from memory other than
// the arguments, every vector and mask register, and anything computed
// from them is secret.
package ctcheck

import (
	"fmt"
	"regexp"
	"strings"
)

// Violation is one finding: the line, the function and why.
type Violation struct {
	Line   int
	Func   string
	Reason string
}

func (v Violation) String() string { return fmt.Sprintf("line %d (%s): %s", v.Line, v.Func, v.Reason) }

// Report is the outcome of a check: what was found and how much was
// looked at (so a test can tell a clean file from one it failed to read).
type Report struct {
	Violations []Violation
	Funcs      map[string]bool // every TEXT symbol
	Tables     map[string]bool // every DATA/GLOBL symbol
	MemOps     int             // memory operands checked
	// DataArgs names, per function, the arguments found used as data
	// (secret in that function).
	DataArgs map[string][]string
}

type insn struct {
	line int
	op   string
	args []string
}

// function is one TEXT block: its instructions, where its labels point
// and its arguments (by name, in order of first use).
type function struct {
	name   string
	insns  []insn
	labels map[string]int
	args   map[string]int
	argN   []string
}

var memRe = regexp.MustCompile(`^([^()]*)\(([A-Z0-9]+)\)(?:\(([A-Z0-9]+)\*[1248]\))?$`)

// mem splits a memory operand into displacement/symbol, base and index
// (empty when none); ok is false for any other operand.
func mem(a string) (disp, base, index string, ok bool) {
	m := memRe.FindStringSubmatch(a)
	if m == nil {
		return "", "", "", false
	}
	return m[1], m[2], m[3], true
}

// parse splits assembly text into functions and collects the table
// symbols (every DATA or GLOBL name).
func parse(src string) (funcs []*function, tables map[string]bool) {
	tables = map[string]bool{}
	var cur *function
	for i, raw := range strings.Split(src, "\n") {
		line := raw
		if c := strings.Index(line, "//"); c >= 0 {
			line = line[:c]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest := line, ""
		if k := strings.IndexAny(line, " \t"); k >= 0 {
			op, rest = line[:k], line[k+1:]
		}
		switch op {
		case "DATA", "GLOBL":
			if sym, _, ok := strings.Cut(strings.TrimSpace(rest), "("); ok {
				sym, _, _ = strings.Cut(sym, "+")
				tables[sym] = true
			}
			continue
		case "TEXT":
			name, _, _ := strings.Cut(strings.TrimSpace(rest), "(")
			cur = &function{name: name, labels: map[string]int{}, args: map[string]int{}}
			funcs = append(funcs, cur)
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasSuffix(line, ":") && !strings.ContainsAny(line, " \t") {
			cur.labels[strings.TrimSuffix(line, ":")] = len(cur.insns)
			continue
		}
		var args []string
		if rest = strings.TrimSpace(rest); rest != "" {
			for _, a := range strings.Split(rest, ",") {
				a = strings.TrimSpace(a)
				args = append(args, a)
				if disp, base, _, ok := mem(a); ok && base == "FP" {
					name, _, _ := strings.Cut(disp, "+")
					if _, seen := cur.args[name]; !seen {
						cur.args[name] = len(cur.argN)
						cur.argN = append(cur.argN, name)
					}
				}
			}
		}
		cur.insns = append(cur.insns, insn{line: i + 1, op: op, args: args})
	}
	return funcs, tables
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

// noFlags are the instructions that write a register and leave the flags
// alone.
func noFlags(op string) bool {
	for _, p := range []string{"MOV", "LEA", "SHLX", "SHRX", "SARX", "RORX", "PDEP", "PEXT", "KMOV", "V", "SET", "CMOV", "BSWAP", "NOT", "XCHG", "POP", "PUSH", "CQO", "CDQ", "CWD"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// isMove reports whether op copies its source to its destination (the
// destination's old value is not read).
func isMove(op string) bool {
	return strings.HasPrefix(op, "MOV") || strings.HasPrefix(op, "VMOV") || strings.HasPrefix(op, "KMOV") ||
		strings.HasPrefix(op, "VPBROADCAST") || strings.HasPrefix(op, "VBROADCAST")
}
