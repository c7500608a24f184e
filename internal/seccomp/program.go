// Package seccomp builds the wall's seccomp filter: a classic-BPF program, in
// the kernel's struct sock_filter layout, that bubblewrap installs with
// --seccomp FD. The policy lives in table.go; this file only assembles it.
//
// The program is assembled here rather than with
// github.com/elastic/go-seccomp-bpf because that library (v1.6.0) sends a
// syscall from a foreign architecture to the default action, which in a deny
// list is "allow", and compares all 64 bits of an argument, so
// ioctl(fd, TIOCSTI|1<<32) would slip past an "equal TIOCSTI" rule while the
// kernel still sees TIOCSTI.
package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Classic BPF opcodes the program uses (linux/filter.h). The kernel's
// seccomp_check_filter accepts each of them.
const (
	opLdAbsW  = 0x20 // BPF_LD | BPF_W | BPF_ABS
	opJeqK    = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	opJgtK    = 0x25 // BPF_JMP | BPF_JGT | BPF_K
	opJgeK    = 0x35 // BPF_JMP | BPF_JGE | BPF_K
	opJsetK   = 0x45 // BPF_JMP | BPF_JSET | BPF_K
	opRetK    = 0x06 // BPF_RET | BPF_K
	insnBytes = 8    // sizeof(struct sock_filter)
	maxInsns  = 4096 // BPF_MAXINSNS
)

// Offsets into struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6];}.
const (
	offNr       = 0
	offArch     = 4
	offArgs     = 16
	seccompData = 64 // sizeof(struct seccomp_data)
)

// Seccomp return values (linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
	retDataMask    = 0x0000ffff
)

// x32Bit is __X32_SYSCALL_BIT: x32 syscalls arrive with AUDIT_ARCH_X86_64 and
// their own numbers, offset by this bit.
const x32Bit = 0x40000000

// archInfo is what the assembler needs to know about one architecture.
type archInfo struct {
	auditArch uint32 // AUDIT_ARCH_* the kernel reports in seccomp_data.arch
	x32       bool   // the kernel may accept x32 syscalls under auditArch
	nr        func(nrs) int
}

// arches holds every architecture with a table, by GOARCH. Both are
// little-endian, which is where the low half of an argument is read from.
var arches = map[string]archInfo{
	"amd64": {auditArch: 0xc000003e, x32: true, nr: func(n nrs) int { return n.amd64 }},
	"arm64": {auditArch: 0xc00000b7, nr: func(n nrs) int { return n.arm64 }},
}

// HasTable reports whether the wall has a syscall table, and so a filter, for
// goarch (a GOARCH value). Without one the best tier is walled-noseccomp.
func HasTable(goarch string) bool {
	_, ok := arches[goarch]
	return ok
}

// Program is an assembled filter for one architecture. It is immutable.
type Program struct {
	arch  string
	insns []instruction
}

// Arch returns the GOARCH the program was built for.
func (p *Program) Arch() string { return p.arch }

// Len returns the number of BPF instructions.
func (p *Program) Len() int { return len(p.insns) }

// Bytes returns the program as an array of struct sock_filter in the target's
// byte order, ready for bubblewrap's --seccomp FD. Each call returns a new
// slice.
func (p *Program) Bytes() []byte {
	out := make([]byte, 0, len(p.insns)*insnBytes)
	for _, in := range p.insns {
		out = binary.LittleEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.LittleEndian.AppendUint32(out, in.k)
	}
	return out
}

type instruction struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func ldAbs(off uint32) instruction { return instruction{code: opLdAbsW, k: off} }
func ret(k uint32) instruction     { return instruction{code: opRetK, k: k} }
func jmp(op uint16, k uint32, jt, jf uint8) instruction {
	return instruction{code: op, jt: jt, jf: jf, k: k}
}

// checkKind says when a rule's syscall is refused.
type checkKind int

const (
	checkAlways  checkKind = iota // every call
	checkBitsSet                  // arg & mask != 0
	checkOneOf                    // arg is one of values
	checkNoneOf                   // arg is none of values
)

// check is the condition and the answer of one rule. Arguments are compared
// on their lower 32 bits only (see table.go).
type check struct {
	kind   checkKind
	arg    int
	mask   uint32
	values []uint32
	errno  uint32
}

func always(errno uint32) check { return check{kind: checkAlways, errno: errno} }
func ifBitsSet(arg int, mask, errno uint32) check {
	return check{kind: checkBitsSet, arg: arg, mask: mask, errno: errno}
}
func ifOneOf(arg int, values []uint32, errno uint32) check {
	return check{kind: checkOneOf, arg: arg, values: values, errno: errno}
}
func ifNoneOf(arg int, values []uint32, errno uint32) check {
	return check{kind: checkNoneOf, arg: arg, values: values, errno: errno}
}

// rule is one entry of the deny list.
type rule struct {
	name  string
	nr    nrs
	check check
	why   string
}

// boundRule is a rule with its number on one architecture.
type boundRule struct {
	rule
	num uint32
}

// Build assembles the filter for goarch (a GOARCH value). An architecture
// without a table, or a table that fails its own checks, is an error: the
// caller must not run the wall, or run it as walled-noseccomp only when
// HasTable is false.
func Build(goarch string) (*Program, error) {
	a, ok := arches[goarch]
	if !ok {
		return nil, fmt.Errorf("seccomp: no syscall table for architecture %q (tables exist for %v); the wall can be walled-noseccomp at most", goarch, tableArches())
	}
	rules, err := bindRules(a, denyList)
	if err != nil {
		return nil, fmt.Errorf("seccomp: the %s table is inconsistent, so no filter was built: %w", goarch, err)
	}
	insns, err := assemble(a, rules)
	if err != nil {
		return nil, fmt.Errorf("seccomp: cannot assemble the %s filter: %w", goarch, err)
	}
	if err := verify(insns); err != nil {
		return nil, fmt.Errorf("seccomp: the assembled %s filter is malformed: %w", goarch, err)
	}
	return &Program{arch: goarch, insns: insns}, nil
}

func tableArches() []string {
	names := make([]string, 0, len(arches))
	for n := range arches {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// bindRules resolves each rule's number on a, drops rules the architecture
// has no syscall for, checks the table for mistakes, and sorts by number so
// the program is the same on every build.
func bindRules(a archInfo, list []rule) ([]boundRule, error) {
	var errs []error
	names := map[string]bool{}
	nums := map[uint32]string{}
	var out []boundRule
	for _, r := range list {
		if names[r.name] {
			errs = append(errs, fmt.Errorf("%s is listed twice", r.name))
		}
		names[r.name] = true
		n := a.nr(r.nr)
		if n == none {
			continue
		}
		if n < 0 || n > maxReviewed {
			errs = append(errs, fmt.Errorf("%s has number %d, outside 0..%d", r.name, n, maxReviewed))
			continue
		}
		num := uint32(n)
		if other, dup := nums[num]; dup {
			errs = append(errs, fmt.Errorf("%s and %s share number %d", r.name, other, num))
		}
		nums[num] = r.name
		if err := r.check.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
		}
		if r.why == "" {
			errs = append(errs, fmt.Errorf("%s has no reason", r.name))
		}
		out = append(out, boundRule{rule: r, num: num})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, errors.New("no rule applies")
	}
	slices.SortFunc(out, func(x, y boundRule) int { return int(x.num) - int(y.num) })
	return out, nil
}

func (c check) validate() error {
	if c.errno == 0 || c.errno > retDataMask {
		return fmt.Errorf("errno %d is not a usable error", c.errno)
	}
	switch c.kind {
	case checkAlways:
		return nil
	case checkBitsSet:
		if c.mask == 0 {
			return errors.New("bit check with an empty mask never refuses")
		}
	case checkOneOf, checkNoneOf:
		if len(c.values) == 0 {
			return errors.New("value check with no values")
		}
		// Each value costs one instruction inside a body that a jump of at
		// most 255 must cross.
		if len(c.values) > 200 {
			return fmt.Errorf("%d values is too many for one rule", len(c.values))
		}
	default:
		return fmt.Errorf("unknown check kind %d", c.kind)
	}
	if c.arg < 0 || c.arg > 5 {
		return fmt.Errorf("argument index %d is outside 0..5", c.arg)
	}
	return nil
}

// assemble lays the program out as:
//
//	load arch; not native -> kill
//	load nr; x32 bit set (amd64) -> kill
//	nr > maxReviewed -> ENOSYS
//	for each rule, by number: nr == rule -> its body (which always returns)
//	allow
//
// Every rule body ends in a return, so the accumulator still holds nr when a
// non-matching rule is skipped.
func assemble(a archInfo, rules []boundRule) ([]instruction, error) {
	p := []instruction{
		ldAbs(offArch),
		jmp(opJeqK, a.auditArch, 1, 0),
		ret(retKillProcess),
		ldAbs(offNr),
	}
	if a.x32 {
		p = append(p,
			jmp(opJgeK, x32Bit, 0, 1),
			ret(retKillProcess))
	}
	p = append(p,
		jmp(opJgtK, maxReviewed, 0, 1),
		ret(retErrno|errENOSYS))
	for _, r := range rules {
		body := r.check.body()
		if len(body) > 255 {
			return nil, fmt.Errorf("%s: body of %d instructions is too long to jump over", r.name, len(body))
		}
		p = append(p, jmp(opJeqK, r.num, 0, uint8(len(body))))
		p = append(p, body...)
	}
	p = append(p, ret(retAllow))
	if len(p) > maxInsns {
		return nil, fmt.Errorf("%d instructions, over the kernel's limit of %d", len(p), maxInsns)
	}
	return p, nil
}

// body returns the instructions run once the syscall number matched.
func (c check) body() []instruction {
	deny := ret(retErrno | c.errno)
	allow := ret(retAllow)
	if c.kind == checkAlways {
		return []instruction{deny}
	}
	out := []instruction{ldAbs(uint32(offArgs + 8*c.arg))}
	if c.kind == checkBitsSet {
		return append(out, jmp(opJsetK, c.mask, 0, 1), deny, allow)
	}
	// A run of compares; a hit jumps over the remaining compares and the
	// first return to the second one.
	n := len(c.values)
	for i, v := range c.values {
		out = append(out, jmp(opJeqK, v, uint8(n-i), 0))
	}
	if c.kind == checkOneOf {
		return append(out, allow, deny)
	}
	return append(out, deny, allow)
}

// verify checks what the kernel's checker would reject and more: only the
// opcodes above, aligned loads inside seccomp_data, every jump landing inside
// the program, and no path that runs off the end.
func verify(p []instruction) error {
	if len(p) == 0 || len(p) > maxInsns {
		return fmt.Errorf("length %d is outside 1..%d", len(p), maxInsns)
	}
	for i, in := range p {
		switch in.code {
		case opLdAbsW:
			if in.k%4 != 0 || in.k+4 > seccompData {
				return fmt.Errorf("instruction %d loads offset %d, not an aligned word of seccomp_data", i, in.k)
			}
		case opJeqK, opJgtK, opJgeK, opJsetK:
			if i+1+int(in.jt) >= len(p) || i+1+int(in.jf) >= len(p) {
				return fmt.Errorf("instruction %d jumps past the end", i)
			}
		case opRetK:
		default:
			return fmt.Errorf("instruction %d has opcode %#x, which this assembler never emits", i, in.code)
		}
	}
	if p[len(p)-1].code != opRetK {
		return errors.New("the last instruction is not a return")
	}
	return nil
}
