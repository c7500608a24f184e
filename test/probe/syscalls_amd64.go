package main

import (
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// int80 makes an i386 system call through `int $0x80` (int80_amd64.s). The
// kernel reports it to seccomp as AUDIT_ARCH_I386 with i386 numbers, which a
// filter written for x86_64 numbers would misread.
func int80(trap, a1, a2, a3 uintptr) uintptr

const (
	i386Getpid = 20
	x32Bit     = 0x40000000
)

func archAttempts() []attempt {
	return []attempt{
		// A foreign ABI is killed by the filter, so the evidence of a refusal
		// is SIGSYS, and the control (no filter) is the pid.
		{name: "int80_getpid", call: "getpid via int $0x80 (i386 ABI)", run: func() (uintptr, unix.Errno) {
			// A kernel without i386 syscalls answers int $0x80 with a
			// general protection fault (SIGSEGV, SI_KERNEL) before seccomp
			// sees anything; make that a panic runTry can report.
			debug.SetPanicOnFault(true)
			r := int80(i386Getpid, 0, 0, 0)
			if e := -int64(int32(r)); e > 0 && e < 4096 {
				return ^uintptr(0), unix.Errno(e)
			}
			return r, 0
		}},
		{name: "x32_getpid", call: "syscall(__X32_SYSCALL_BIT|39)", run: sys(x32Bit | unix.SYS_GETPID)},
		{name: "iopl", call: "iopl(0)", run: sys(unix.SYS_IOPL, 0)},
		{name: "ioperm", call: "ioperm(0, 0, 0)", run: sys(unix.SYS_IOPERM, 0, 0, 0)},
		{name: "modify_ldt", call: "modify_ldt(0, NULL, 0)", run: sys(unix.SYS_MODIFY_LDT, 0, 0, 0)},
		{name: "uselib", call: "uselib(NULL)", run: sys(unix.SYS_USELIB, 0)},
	}
}
