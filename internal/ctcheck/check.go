package ctcheck

import (
	"fmt"
	"strings"
)

// state is what the check knows before an instruction: which GPRs (bit
// i: register index i) may hold a secret, which may point into a constant
// table, whether the flags may depend on a secret, and which arguments
// (bit j: the function's argument j) each GPR and the flags derive from.
type state struct {
	secret, table uint32
	flags         bool
	prov          [16]uint64
	flagProv      uint64
}

func (s state) join(o state) state {
	r := state{secret: s.secret | o.secret, table: s.table | o.table, flags: s.flags || o.flags, flagProv: s.flagProv | o.flagProv}
	for i := range r.prov {
		r.prov[i] = s.prov[i] | o.prov[i]
	}
	return r
}

// Check checks every function of the assembly text src.
func Check(src string) Report {
	funcs, tables := parse(src)
	rep := Report{Funcs: map[string]bool{}, Tables: tables, DataArgs: map[string][]string{}}
	for _, f := range funcs {
		rep.Funcs[f.name] = true
		// Pass 1: every argument public; find those used as data.
		a := &analysis{f: f, tables: tables}
		a.run()
		// Pass 2: those are secret; report.
		b := &analysis{f: f, tables: tables, secretArgs: a.dataArgs, report: true}
		b.run()
		rep.Violations = append(rep.Violations, b.found...)
		rep.MemOps += b.memOps
		for j, name := range f.argN {
			if a.dataArgs&argBit(j) != 0 {
				rep.DataArgs[f.name] = append(rep.DataArgs[f.name], name)
			}
		}
	}
	return rep
}

// argBit is argument j's provenance bit (arguments past 63 share one).
func argBit(j int) uint64 { return 1 << min(j, 63) }

type analysis struct {
	f          *function
	tables     map[string]bool
	secretArgs uint64 // arguments that are secret (pass 2)
	report     bool
	dataArgs   uint64 // arguments used as data (pass 1)
	found      []Violation
	byLine     map[int]int // line → index in found
	memOps     int
}

// run takes the analysis to a fixpoint over f's control flow (a label's
// state joins every path into it), then, reporting, visits each reachable
// instruction once more.
func (a *analysis) run() {
	n := len(a.f.insns)
	in := make([]state, n+1)
	seen := make([]bool, n+1)
	seen[0] = true
	rep := a.report
	a.report = false
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			if !seen[i] {
				continue
			}
			out, next := a.step(i, in[i])
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
	a.report = rep
	if !rep {
		return
	}
	a.byLine = map[int]int{}
	for i := 0; i < n; i++ {
		if seen[i] {
			a.step(i, in[i])
		}
	}
}

// bad records a finding at instruction ins (reporting pass only).
func (a *analysis) bad(ins insn, reason string) {
	if !a.report {
		return
	}
	if k, ok := a.byLine[ins.line]; ok {
		a.found[k].Reason += "; " + reason
		return
	}
	a.byLine[ins.line] = len(a.found)
	a.found = append(a.found, Violation{Line: ins.line, Func: a.f.name, Reason: reason})
}

// taint is what a source operand carries: secret, table pointer, and the
// arguments it derives from. A memory operand's value is its contents.
func (a *analysis) taint(s *state, op string) (secret, table bool, prov uint64) {
	if r, ok := gprs[op]; ok {
		return s.secret&(1<<r) != 0, s.table&(1<<r) != 0, s.prov[r]
	}
	if strings.HasPrefix(op, "$") {
		return false, false, 0
	}
	if isVecOrMask(op) {
		return true, false, 0
	}
	if disp, base, _, ok := mem(op); ok {
		if base == "FP" {
			name, _, _ := strings.Cut(disp, "+")
			j := argBit(a.f.args[name])
			return a.secretArgs&j != 0, false, j
		}
		return true, false, 0 // loaded data
	}
	return true, false, 0 // anything unrecognised counts as secret
}

// addresses checks every address ins forms: none may use a secret
// register, and a constant table's may have no index.
func (a *analysis) addresses(s *state, ins insn) {
	if strings.HasPrefix(ins.op, "LEA") {
		return
	}
	for _, op := range ins.args {
		disp, base, index, ok := mem(op)
		if !ok {
			continue
		}
		if a.report {
			a.memOps++
		}
		sym, _, _ := strings.Cut(disp, "+")
		onTable := base == "SB" && a.tables[sym]
		for _, r := range []string{base, index} {
			g, ok := gprs[r]
			if !ok {
				continue
			}
			if s.secret&(1<<g) != 0 {
				a.bad(ins, fmt.Sprintf("address %s uses %s, which may hold a secret", op, r))
			}
			if r == base && s.table&(1<<g) != 0 {
				onTable = true
			}
		}
		if onTable && index != "" {
			a.bad(ins, fmt.Sprintf("constant table read %s is indexed by %s", op, index))
		}
	}
	if strings.Contains(ins.op, "GATHER") || strings.Contains(ins.op, "SCATTER") {
		a.bad(ins, ins.op+" forms addresses from vector data")
	}
}

// set gives GPR d the taint (sec, tab, prov).
func set(s *state, d int, sec, tab bool, prov uint64) {
	s.secret &^= 1 << d
	s.table &^= 1 << d
	if sec {
		s.secret |= 1 << d
	}
	if tab {
		s.table |= 1 << d
	}
	s.prov[d] = prov
}

// clobber makes every GPR and the flags unknown (secret), as after a
// call.
func clobber(s *state) {
	*s = state{secret: 1<<16 - 1, flags: true}
}
