//go:build !amd64

package main

func archAttempts() []attempt {
	const why = "x86 only"
	return []attempt{
		{name: "int80_getpid", call: "getpid via int $0x80 (i386 ABI)", skip: why},
		{name: "x32_getpid", call: "syscall(__X32_SYSCALL_BIT|39)", skip: why},
		{name: "iopl", call: "iopl(0)", skip: why},
		{name: "ioperm", call: "ioperm(0, 0, 0)", skip: why},
		{name: "modify_ldt", call: "modify_ldt(0, NULL, 0)", skip: why},
		{name: "uselib", call: "uselib(NULL)", skip: why},
	}
}
