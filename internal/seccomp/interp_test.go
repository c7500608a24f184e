package seccomp

import (
	"encoding/binary"
	"fmt"
)

// This file is a small classic-BPF interpreter for seccomp programs, written
// for the tests from the kernel's semantics rather than from the assembler,
// so a wrong jump or a wrong load shows up as a wrong answer. It runs the
// serialized bytes, so the sock_filter encoding is tested too.

// seccompInput is struct seccomp_data.
type seccompInput struct {
	nr   uint32 // int in the kernel; bit patterns are what matter here
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays the struct out as the kernel does on a little-endian machine:
// seccomp's loads read native-endian words.
func (d seccompInput) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// runFilter executes prog (an array of struct sock_filter) over in and
// returns the seccomp return value.
func runFilter(prog []byte, in seccompInput) (uint32, error) {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return 0, fmt.Errorf("program is %d bytes, not a whole number of instructions", len(prog))
	}
	data := in.bytes()
	n := len(prog) / 8
	var acc uint32
	for pc, steps := 0, 0; ; pc, steps = pc+1, steps+1 {
		if pc >= n {
			return 0, fmt.Errorf("ran off the end at %d", pc)
		}
		if steps > n {
			return 0, fmt.Errorf("more steps than instructions: a backward jump?")
		}
		ins := prog[pc*8 : pc*8+8]
		code := binary.LittleEndian.Uint16(ins[0:])
		jt, jf := int(ins[2]), int(ins[3])
		k := binary.LittleEndian.Uint32(ins[4:])
		class := code & 0x07
		switch class {
		case 0x00: // BPF_LD
			if code != 0x20 { // only W|ABS is valid for seccomp
				return 0, fmt.Errorf("pc %d: load mode %#x", pc, code)
			}
			if k%4 != 0 || int(k)+4 > len(data) {
				return 0, fmt.Errorf("pc %d: load at %d", pc, k)
			}
			acc = binary.LittleEndian.Uint32(data[k:])
		case 0x05: // BPF_JMP
			if code&0x08 != 0 { // BPF_X: no index register in these programs
				return 0, fmt.Errorf("pc %d: jump against X", pc)
			}
			var taken bool
			switch code & 0xf0 {
			case 0x00: // BPF_JA
				pc += int(k)
				continue
			case 0x10:
				taken = acc == k
			case 0x20:
				taken = acc > k
			case 0x30:
				taken = acc >= k
			case 0x40:
				taken = acc&k != 0
			default:
				return 0, fmt.Errorf("pc %d: jump op %#x", pc, code)
			}
			if taken {
				pc += jt
			} else {
				pc += jf
			}
		case 0x06: // BPF_RET
			if code != 0x06 {
				return 0, fmt.Errorf("pc %d: return of A or X", pc)
			}
			return k, nil
		default:
			return 0, fmt.Errorf("pc %d: instruction class %#x", pc, class)
		}
	}
}
