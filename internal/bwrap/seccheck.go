package bwrap

import (
	"encoding/binary"
	"fmt"
)

// maxBPFInsns is the kernel's BPF_MAXINSNS.
const maxBPFInsns = 4096

// seccompDataSize is sizeof(struct seccomp_data).
const seccompDataSize = 64

// CheckSeccompProgram checks a classic BPF seccomp program the way the
// kernel will (bpf_check_classic and seccomp_check_filter): a whole number of
// 8-byte instructions, at most 4096, only the opcodes seccomp accepts,
// aligned loads inside struct seccomp_data, jumps that land inside the
// program, and a return at the end. Start refuses a program that fails here
// before any process runs; bubblewrap would otherwise start, fail to load it
// and exit before running the command.
func CheckSeccompProgram(prog []byte) error {
	if len(prog) == 0 {
		return fmt.Errorf("seccomp program is empty")
	}
	if len(prog)%8 != 0 {
		return fmt.Errorf("seccomp program is %d bytes, not a whole number of 8-byte instructions", len(prog))
	}
	n := len(prog) / 8
	if n > maxBPFInsns {
		return fmt.Errorf("seccomp program has %d instructions, over the kernel's %d", n, maxBPFInsns)
	}
	for pc := 0; pc < n; pc++ {
		ins := prog[pc*8 : pc*8+8]
		code := binary.LittleEndian.Uint16(ins[0:2])
		jt, jf := int(ins[2]), int(ins[3])
		k := binary.LittleEndian.Uint32(ins[4:8])
		bad := func(why string) error {
			return fmt.Errorf("seccomp program instruction %d (code %#04x): %s", pc, code, why)
		}
		switch code {
		case 0x20: // ld [k]
			if k >= seccompDataSize || k%4 != 0 {
				return bad("load outside struct seccomp_data or unaligned")
			}
		case 0x80, 0x81, // ld len, ldx len
			0x06, 0x16, // ret k, ret a
			0x00, 0x01, // ld #k, ldx #k
			0x07, 0x87, // tax, txa
			0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x3c, 0x9c, // add, sub, mul, div x, mod x
			0x44, 0x4c, 0x54, 0x5c, 0xa4, 0xac, 0x6c, 0x7c, 0x84: // or, and, xor, lsh x, rsh x, neg
		case 0x34, 0x94: // div k, mod k
			if k == 0 {
				return bad("division by zero")
			}
		case 0x64, 0x74: // lsh k, rsh k
			if k >= 32 {
				return bad("shift of 32 or more")
			}
		case 0x60, 0x61, 0x02, 0x03: // ld M[k], ldx M[k], st, stx
			if k >= 16 {
				return bad("scratch memory index out of range")
			}
		case 0x05: // ja
			if uint64(pc)+1+uint64(k) >= uint64(n) {
				return bad("jump past the end")
			}
		case 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d: // jeq, jgt, jge, jset
			if pc+1+jt >= n || pc+1+jf >= n {
				return bad("jump past the end")
			}
		default:
			return bad("not an instruction seccomp accepts")
		}
	}
	last := binary.LittleEndian.Uint16(prog[len(prog)-8:])
	if last != 0x06 && last != 0x16 {
		return fmt.Errorf("seccomp program does not end with a return")
	}
	return nil
}
