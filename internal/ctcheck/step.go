package ctcheck

import "strings"

// step runs instruction i on s: it checks the addresses the instruction
// forms and its branch, and returns the state after it and the
// instructions that may follow it.
func (a *analysis) step(i int, s state) (state, []int) {
	ins := a.f.insns[i]
	op := ins.op
	a.addresses(&s, ins)
	next := []int{i + 1}
	switch {
	case op == "RET":
		return s, nil
	case op == "JMP":
		if len(ins.args) == 1 {
			if t, ok := a.f.labels[ins.args[0]]; ok {
				return s, []int{t}
			}
		}
		a.bad(ins, "indirect jump")
		return s, nil
	case op == "CALL":
		if len(ins.args) != 1 || !directTarget(ins.args[0]) {
			a.bad(ins, "indirect call")
		}
		clobber(&s) // the callee may leave anything in any register
		return s, next
	case op[0] == 'J':
		if s.flags {
			a.bad(ins, op+" branches on flags that may come from a secret")
		}
		if len(ins.args) == 1 {
			if t, ok := a.f.labels[ins.args[0]]; ok {
				next = append(next, t)
			}
		}
		return s, next
	case op == "CPUID":
		for _, r := range []string{"AX", "BX", "CX", "DX"} {
			set(&s, gprs[r], false, false, 0)
		}
		return s, next
	case op == "CQO" || op == "CDQ" || op == "CWD":
		// DX := the sign of AX.
		ax := gprs["AX"]
		set(&s, gprs["DX"], s.secret&(1<<ax) != 0, false, s.prov[ax])
		return s, next
	case strings.HasPrefix(op, "MUL") || strings.HasPrefix(op, "DIV") || strings.HasPrefix(op, "IDIV"):
		a.bad(ins, op+" is not modelled (implicit AX, DX)")
	case strings.HasPrefix(op, "POP") && len(ins.args) == 1:
		// Loaded from the stack, which is not modelled: secret.
		if d, ok := gprs[ins.args[0]]; ok {
			set(&s, d, true, false, 0)
		}
		return s, next
	case strings.HasPrefix(op, "PUSH"):
		return s, next
	case strings.HasPrefix(op, "XCHG") && len(ins.args) == 2:
		return a.xchg(s, ins), next
	case strings.HasPrefix(op, "CMPXCHG") && len(ins.args) == 2:
		return a.cmpxchg(s, ins), next
	}
	if len(ins.args) == 0 {
		return s, next
	}
	dst := ins.args[len(ins.args)-1]
	d, dstGPR := gprs[dst]
	_, _, _, dstMem := mem(dst)
	var sec, tab bool
	var prov uint64
	srcs := ins.args[:len(ins.args)-1]
	switch {
	case strings.HasPrefix(op, "LEA"):
		if disp, base, index, ok := mem(ins.args[0]); ok {
			sym, _, _ := strings.Cut(disp, "+")
			tab = base == "SB" && a.tables[sym]
			for _, r := range []string{base, index} {
				if g, ok := gprs[r]; ok {
					sec = sec || s.secret&(1<<g) != 0
					tab = tab || (r == base && s.table&(1<<g) != 0)
					prov |= s.prov[g]
				}
			}
		}
		srcs = nil
	case len(ins.args) == 2 && ins.args[0] == dst && strings.HasPrefix(op, "XOR"):
		srcs = nil // XOR r, r: zero
	case len(ins.args) <= 2 && !isMove(op):
		srcs = ins.args // read-modify-write
	}
	for _, x := range srcs {
		xs, xt, xp := a.taint(&s, x)
		sec, tab, prov = sec || xs, tab || xt, prov|xp
	}
	if strings.HasPrefix(op, "CMOV") || strings.HasPrefix(op, "SET") {
		sec, prov = sec || s.flags, prov|s.flagProv
	}
	// An argument combined with a secret, moved into a vector or mask
	// register, or stored to memory is data: secret in this function.
	if sec || isVecOrMask(dst) || dstMem {
		a.dataArgs |= prov
	}
	switch {
	case strings.HasPrefix(op, "CMP") || strings.HasPrefix(op, "TEST") || strings.HasPrefix(op, "BT"):
		s.flags, s.flagProv = false, 0
		for _, x := range ins.args {
			xs, _, xp := a.taint(&s, x)
			s.flags, s.flagProv = s.flags || xs, s.flagProv|xp
		}
		return s, next
	case strings.HasPrefix(op, "PTEST") || strings.HasPrefix(op, "VPTEST") && !strings.HasPrefix(op, "VPTESTM") && !strings.HasPrefix(op, "VPTESTNM") ||
		strings.HasPrefix(op, "KORTEST") || strings.HasPrefix(op, "KTEST") ||
		strings.Contains(op, "COMIS"):
		s.flags, s.flagProv = true, 0
		return s, next
	}
	if dstMem && !isMove(op) && !noFlags(op) {
		// An ALU op on memory: its flags come from loaded data.
		s.flags, s.flagProv = true, prov
		return s, next
	}
	if !dstGPR {
		return s, next
	}
	set(&s, d, sec, tab, prov)
	if !noFlags(op) {
		s.flags, s.flagProv = sec, prov
	}
	return s, next
}

// directTarget reports whether a call target is a symbol (sym(SB)), not a
// register or a pointer in memory.
func directTarget(t string) bool {
	_, base, index, ok := mem(t)
	return ok && base == "SB" && index == ""
}

// xchg swaps two operands: two GPRs swap their taint; a GPR exchanged
// with memory receives loaded data (secret) and stores its own value
// (data, if it came from an argument).
func (a *analysis) xchg(s state, ins insn) state {
	x, y := ins.args[0], ins.args[1]
	gx, okx := gprs[x]
	gy, oky := gprs[y]
	switch {
	case okx && oky:
		bx := [3]any{s.secret&(1<<gx) != 0, s.table&(1<<gx) != 0, s.prov[gx]}
		set(&s, gx, s.secret&(1<<gy) != 0, s.table&(1<<gy) != 0, s.prov[gy])
		set(&s, gy, bx[0].(bool), bx[1].(bool), bx[2].(uint64))
	case okx:
		a.dataArgs |= s.prov[gx]
		set(&s, gx, true, false, 0)
	case oky:
		a.dataArgs |= s.prov[gy]
		set(&s, gy, true, false, 0)
	}
	return s
}

// cmpxchg is CMPXCHG src, dst: it compares AX with dst (the flags), then
// writes src to dst or dst to AX.
func (a *analysis) cmpxchg(s state, ins insn) state {
	src, dst := ins.args[0], ins.args[1]
	ax := gprs["AX"]
	ss, st, sp := a.taint(&s, src)
	ds, _, dp := a.taint(&s, dst)
	as := s.secret&(1<<ax) != 0
	s.flags, s.flagProv = as || ds, s.prov[ax]|dp
	if as || ds || ss {
		a.dataArgs |= s.prov[ax] | dp | sp
	}
	set(&s, ax, as || ds, false, s.prov[ax]|dp)
	if d, ok := gprs[dst]; ok {
		set(&s, d, ds || ss, st, dp|sp)
	} else {
		a.dataArgs |= sp // stored to memory
	}
	return s
}
