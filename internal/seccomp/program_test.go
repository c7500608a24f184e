package seccomp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	elasticarch "github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

const (
	auditX86_64  = 0xc000003e
	auditI386    = 0x40000003
	auditAArch64 = 0xc00000b7
	auditARM     = 0x40000028
)

const (
	actKill   = retKillProcess
	actAllow  = retAllow
	actEPERM  = retErrno | errEPERM
	actENOSYS = retErrno | errENOSYS
	actEAFNO  = retErrno | errEAFNOSUPPORT
)

func actionName(a uint32) string {
	switch {
	case a == actKill:
		return "KILL_PROCESS"
	case a == actAllow:
		return "ALLOW"
	case a&0xffff0000 == retErrno:
		return fmt.Sprintf("ERRNO(%d)", a&retDataMask)
	}
	return fmt.Sprintf("%#x", a)
}

func mustBuild(t testing.TB, goarch string) *Program {
	t.Helper()
	p, err := Build(goarch)
	if err != nil {
		t.Fatalf("Build(%q): %v", goarch, err)
	}
	return p
}

type call struct {
	name string
	arch uint32
	nr   uint32
	args [6]uint64
	want uint32
}

// Expectations are written with raw numbers, not looked up in the table, so a
// wrong number in table.go fails here.
func amd64Calls() []call {
	const sigchld = 17
	const threadFlags = 0x003d0f00 // CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID
	c := []call{
		// Positive controls: what every program needs, and clone without
		// namespace flags (fork, threads).
		{"read", auditX86_64, 0, [6]uint64{}, actAllow},
		{"write", auditX86_64, 1, [6]uint64{1}, actAllow},
		{"openat", auditX86_64, 257, [6]uint64{0xffffff9c}, actAllow},
		{"mmap", auditX86_64, 9, [6]uint64{}, actAllow},
		{"getpid", auditX86_64, 39, [6]uint64{}, actAllow},
		{"execve", auditX86_64, 59, [6]uint64{}, actAllow},
		{"futex", auditX86_64, 202, [6]uint64{}, actAllow},
		{"exit_group", auditX86_64, 231, [6]uint64{}, actAllow},
		{"seccomp", auditX86_64, 317, [6]uint64{}, actAllow},
		{"rseq", auditX86_64, 334, [6]uint64{}, actAllow},
		{"pidfd_open", auditX86_64, 434, [6]uint64{}, actAllow},
		{"close_range", auditX86_64, 436, [6]uint64{}, actAllow},
		{"openat2", auditX86_64, 437, [6]uint64{}, actAllow},
		{"landlock_create_ruleset", auditX86_64, 444, [6]uint64{}, actAllow},
		{"statmount", auditX86_64, 457, [6]uint64{}, actAllow},
		{"highest reviewed (rseq_slice_yield)", auditX86_64, 471, [6]uint64{}, actAllow},
		{"clone fork", auditX86_64, 56, [6]uint64{sigchld}, actAllow},
		{"clone thread", auditX86_64, 56, [6]uint64{threadFlags}, actAllow},
		{"clone vfork", auditX86_64, 56, [6]uint64{0x4000 | 0x100 | sigchld}, actAllow},
		// The kernel reads lower_32_bits(flags): a namespace flag in the upper
		// half is not a namespace flag.
		{"clone NEWUSER<<32", auditX86_64, 56, [6]uint64{0x10000000 << 32}, actAllow},

		// clone with each namespace flag, alone and mixed with ordinary flags.
		{"clone NEWNS", auditX86_64, 56, [6]uint64{0x00020000 | sigchld}, actEPERM},
		{"clone NEWCGROUP", auditX86_64, 56, [6]uint64{0x02000000}, actEPERM},
		{"clone NEWUTS", auditX86_64, 56, [6]uint64{0x04000000}, actEPERM},
		{"clone NEWIPC", auditX86_64, 56, [6]uint64{0x08000000}, actEPERM},
		{"clone NEWUSER", auditX86_64, 56, [6]uint64{0x10000000 | sigchld}, actEPERM},
		{"clone NEWPID", auditX86_64, 56, [6]uint64{0x20000000}, actEPERM},
		{"clone NEWNET", auditX86_64, 56, [6]uint64{0x40000000}, actEPERM},
		{"clone thread+NEWUSER", auditX86_64, 56, [6]uint64{threadFlags | 0x10000000}, actEPERM},
		{"clone NEWUSER with upper garbage", auditX86_64, 56, [6]uint64{0xffffffff_10000000}, actEPERM},
		{"clone3", auditX86_64, 435, [6]uint64{}, actENOSYS},

		// Refused whole.
		{"ptrace", auditX86_64, 101, [6]uint64{}, actEPERM},
		{"ptrace TRACEME", auditX86_64, 101, [6]uint64{0}, actEPERM},
		{"process_vm_readv", auditX86_64, 310, [6]uint64{}, actEPERM},
		{"process_vm_writev", auditX86_64, 311, [6]uint64{}, actEPERM},
		{"kcmp", auditX86_64, 312, [6]uint64{}, actEPERM},
		{"pidfd_getfd", auditX86_64, 438, [6]uint64{}, actEPERM},
		{"process_madvise", auditX86_64, 440, [6]uint64{}, actEPERM},
		{"add_key", auditX86_64, 248, [6]uint64{}, actEPERM},
		{"request_key", auditX86_64, 249, [6]uint64{}, actEPERM},
		{"keyctl", auditX86_64, 250, [6]uint64{}, actEPERM},
		{"bpf", auditX86_64, 321, [6]uint64{}, actEPERM},
		{"perf_event_open", auditX86_64, 298, [6]uint64{}, actEPERM},
		{"userfaultfd", auditX86_64, 323, [6]uint64{}, actEPERM},
		{"io_uring_setup", auditX86_64, 425, [6]uint64{}, actEPERM},
		{"io_uring_enter", auditX86_64, 426, [6]uint64{}, actEPERM},
		{"io_uring_register", auditX86_64, 427, [6]uint64{}, actEPERM},
		{"kexec_load", auditX86_64, 246, [6]uint64{}, actEPERM},
		{"kexec_file_load", auditX86_64, 320, [6]uint64{}, actEPERM},
		{"init_module", auditX86_64, 175, [6]uint64{}, actEPERM},
		{"finit_module", auditX86_64, 313, [6]uint64{}, actEPERM},
		{"delete_module", auditX86_64, 176, [6]uint64{}, actEPERM},
		{"mount", auditX86_64, 165, [6]uint64{}, actEPERM},
		{"umount2", auditX86_64, 166, [6]uint64{}, actEPERM},
		{"pivot_root", auditX86_64, 155, [6]uint64{}, actEPERM},
		{"chroot", auditX86_64, 161, [6]uint64{}, actEPERM},
		{"open_tree", auditX86_64, 428, [6]uint64{}, actEPERM},
		{"move_mount", auditX86_64, 429, [6]uint64{}, actEPERM},
		{"fsopen", auditX86_64, 430, [6]uint64{}, actEPERM},
		{"fsconfig", auditX86_64, 431, [6]uint64{}, actEPERM},
		{"fsmount", auditX86_64, 432, [6]uint64{}, actEPERM},
		{"fspick", auditX86_64, 433, [6]uint64{}, actEPERM},
		{"mount_setattr", auditX86_64, 442, [6]uint64{}, actEPERM},
		{"open_tree_attr", auditX86_64, 467, [6]uint64{}, actEPERM},
		{"unshare 0", auditX86_64, 272, [6]uint64{}, actEPERM},
		{"unshare NEWUSER", auditX86_64, 272, [6]uint64{0x10000000}, actEPERM},
		{"setns", auditX86_64, 308, [6]uint64{}, actEPERM},
		{"acct", auditX86_64, 163, [6]uint64{}, actEPERM},
		{"swapon", auditX86_64, 167, [6]uint64{}, actEPERM},
		{"swapoff", auditX86_64, 168, [6]uint64{}, actEPERM},
		{"reboot", auditX86_64, 169, [6]uint64{}, actEPERM},
		{"settimeofday", auditX86_64, 164, [6]uint64{}, actEPERM},
		{"clock_settime", auditX86_64, 227, [6]uint64{}, actEPERM},
		{"adjtimex", auditX86_64, 159, [6]uint64{}, actEPERM},
		{"clock_adjtime", auditX86_64, 305, [6]uint64{}, actEPERM},
		{"syslog", auditX86_64, 103, [6]uint64{}, actEPERM},
		{"quotactl", auditX86_64, 179, [6]uint64{}, actEPERM},
		{"quotactl_fd", auditX86_64, 443, [6]uint64{}, actEPERM},
		{"lookup_dcookie", auditX86_64, 212, [6]uint64{}, actEPERM},
		{"name_to_handle_at", auditX86_64, 303, [6]uint64{}, actEPERM},
		{"open_by_handle_at", auditX86_64, 304, [6]uint64{}, actEPERM},
		{"fanotify_init", auditX86_64, 300, [6]uint64{}, actEPERM},
		{"iopl", auditX86_64, 172, [6]uint64{}, actEPERM},
		{"ioperm", auditX86_64, 173, [6]uint64{}, actEPERM},
		{"modify_ldt", auditX86_64, 154, [6]uint64{}, actEPERM},
		{"uselib", auditX86_64, 134, [6]uint64{}, actEPERM},
		{"nfsservctl", auditX86_64, 180, [6]uint64{}, actEPERM},
		{"vhangup", auditX86_64, 153, [6]uint64{}, actEPERM},
		{"sethostname", auditX86_64, 170, [6]uint64{}, actEPERM},
		{"mbind", auditX86_64, 237, [6]uint64{}, actEPERM},
		{"migrate_pages", auditX86_64, 256, [6]uint64{}, actEPERM},
		{"move_pages", auditX86_64, 279, [6]uint64{}, actEPERM},

		// ioctl: only TIOCSTI and TIOCLINUX, whatever the upper half says.
		{"ioctl TCGETS", auditX86_64, 16, [6]uint64{0, 0x5401}, actAllow},
		{"ioctl FIONREAD", auditX86_64, 16, [6]uint64{0, 0x541B}, actAllow},
		{"ioctl TIOCSTI", auditX86_64, 16, [6]uint64{0, 0x5412}, actEPERM},
		{"ioctl TIOCSTI|1<<32 (CVE-2019-10063)", auditX86_64, 16, [6]uint64{0, 1<<32 | 0x5412}, actEPERM},
		{"ioctl TIOCLINUX", auditX86_64, 16, [6]uint64{0, 0x541C}, actEPERM},
		{"ioctl TIOCSTI as fd, not cmd", auditX86_64, 16, [6]uint64{0x5412, 0x5401}, actAllow},

		// socket families.
		{"socket AF_UNIX", auditX86_64, 41, [6]uint64{1, 1}, actAllow},
		{"socket AF_INET", auditX86_64, 41, [6]uint64{2, 1}, actAllow},
		{"socket AF_INET6", auditX86_64, 41, [6]uint64{10, 2}, actAllow},
		{"socket AF_INET|1<<32 (kernel reads int)", auditX86_64, 41, [6]uint64{1<<32 | 2}, actAllow},
		{"socket AF_UNSPEC", auditX86_64, 41, [6]uint64{0}, actEAFNO},
		{"socket AF_NETLINK", auditX86_64, 41, [6]uint64{16, 3}, actEAFNO},
		{"socket AF_PACKET", auditX86_64, 41, [6]uint64{17, 3}, actEAFNO},
		{"socket AF_KEY", auditX86_64, 41, [6]uint64{15}, actEAFNO},
		{"socket AF_ALG", auditX86_64, 41, [6]uint64{38, 5}, actEAFNO},
		{"socket AF_VSOCK", auditX86_64, 41, [6]uint64{40, 1}, actEAFNO},
		{"socket AF_VSOCK|1<<32", auditX86_64, 41, [6]uint64{1<<32 | 40, 1}, actEAFNO},
		{"socket AF_XDP", auditX86_64, 41, [6]uint64{44}, actEAFNO},
		{"socket -1", auditX86_64, 41, [6]uint64{0xffffffff}, actEAFNO},
		{"socketpair AF_UNIX", auditX86_64, 53, [6]uint64{1}, actAllow},
		{"socketpair AF_NETLINK", auditX86_64, 53, [6]uint64{16}, actEAFNO},

		// personality.
		{"personality PER_LINUX", auditX86_64, 135, [6]uint64{0}, actAllow},
		{"personality PER_LINUX32", auditX86_64, 135, [6]uint64{8}, actAllow},
		{"personality query", auditX86_64, 135, [6]uint64{0xffffffff}, actAllow},
		{"personality ADDR_NO_RANDOMIZE", auditX86_64, 135, [6]uint64{0x0040000}, actEPERM},
		{"personality READ_IMPLIES_EXEC", auditX86_64, 135, [6]uint64{0x0400000}, actEPERM},
		{"personality PER_LINUX32|ADDR_NO_RANDOMIZE", auditX86_64, 135, [6]uint64{0x0040008}, actEPERM},

		// Other ABIs: i386 through int 0x80 and x32, whatever the number.
		{"i386 getpid", auditI386, 20, [6]uint64{}, actKill},
		{"i386 read", auditI386, 3, [6]uint64{}, actKill},
		{"i386 socketcall", auditI386, 102, [6]uint64{}, actKill},
		{"i386 unshare", auditI386, 310, [6]uint64{}, actKill},
		{"aarch64 arch on amd64", auditAArch64, 63, [6]uint64{}, actKill},
		{"arch 0", 0, 0, [6]uint64{}, actKill},
		{"x32 getpid", auditX86_64, x32Bit | 39, [6]uint64{}, actKill},
		{"x32 read", auditX86_64, x32Bit, [6]uint64{}, actKill},
		{"x32 ptrace (521)", auditX86_64, x32Bit | 521, [6]uint64{}, actKill},
		{"nr -1", auditX86_64, 0xffffffff, [6]uint64{}, actKill},

		// Numbers nobody has reviewed yet.
		{"above the table", auditX86_64, 472, [6]uint64{}, actENOSYS},
		{"far above the table", auditX86_64, 1000, [6]uint64{}, actENOSYS},
		{"x32-only slot without the bit", auditX86_64, 512, [6]uint64{}, actENOSYS},
	}
	return c
}

func arm64Calls() []call {
	return []call{
		{"read", auditAArch64, 63, [6]uint64{}, actAllow},
		{"write", auditAArch64, 64, [6]uint64{}, actAllow},
		{"openat", auditAArch64, 56, [6]uint64{}, actAllow},
		{"getpid", auditAArch64, 172, [6]uint64{}, actAllow},
		{"clone fork", auditAArch64, 220, [6]uint64{17}, actAllow},
		{"clone NEWUSER", auditAArch64, 220, [6]uint64{0x10000000 | 17}, actEPERM},
		{"clone3", auditAArch64, 435, [6]uint64{}, actENOSYS},
		{"ptrace", auditAArch64, 117, [6]uint64{}, actEPERM},
		{"keyctl", auditAArch64, 219, [6]uint64{}, actEPERM},
		{"bpf", auditAArch64, 280, [6]uint64{}, actEPERM},
		{"perf_event_open", auditAArch64, 241, [6]uint64{}, actEPERM},
		{"io_uring_setup", auditAArch64, 425, [6]uint64{}, actEPERM},
		{"unshare", auditAArch64, 97, [6]uint64{}, actEPERM},
		{"setns", auditAArch64, 268, [6]uint64{}, actEPERM},
		{"mount", auditAArch64, 40, [6]uint64{}, actEPERM},
		{"umount2", auditAArch64, 39, [6]uint64{}, actEPERM},
		{"ioctl TIOCSTI", auditAArch64, 29, [6]uint64{0, 0x5412}, actEPERM},
		{"ioctl TCGETS", auditAArch64, 29, [6]uint64{0, 0x5401}, actAllow},
		{"socket AF_INET", auditAArch64, 198, [6]uint64{2}, actAllow},
		{"socket AF_VSOCK", auditAArch64, 198, [6]uint64{40}, actEAFNO},
		{"personality ADDR_NO_RANDOMIZE", auditAArch64, 92, [6]uint64{0x0040000}, actEPERM},
		{"AArch32 getpid", auditARM, 20, [6]uint64{}, actKill},
		{"x86_64 arch on arm64", auditX86_64, 39, [6]uint64{}, actKill},
		// No x32 on arm64: a number with bit 30 is just unreviewed.
		{"bit 30 on arm64", auditAArch64, x32Bit | 172, [6]uint64{}, actENOSYS},
		{"above the table", auditAArch64, 472, [6]uint64{}, actENOSYS},
	}
}

func TestFilterDecisions(t *testing.T) {
	for goarch, calls := range map[string][]call{"amd64": amd64Calls(), "arm64": arm64Calls()} {
		prog := mustBuild(t, goarch).Bytes()
		for _, c := range calls {
			t.Run(goarch+"/"+c.name, func(t *testing.T) {
				got, err := runFilter(prog, seccompInput{nr: c.nr, arch: c.arch, args: c.args})
				if err != nil {
					t.Fatalf("interpreter: %v", err)
				}
				if got != c.want {
					t.Errorf("nr %d arch %#x args %#x: got %s, want %s", c.nr, c.arch, c.args, actionName(got), actionName(c.want))
				}
			})
		}
	}
}

// Every rule in table.go, on every architecture, refuses with its errno when
// its condition holds. With TestFilterDecisions (raw numbers) this ties the
// table, the assembler and the expectations together.
func TestEveryRuleRefuses(t *testing.T) {
	for goarch, a := range arches {
		prog := mustBuild(t, goarch).Bytes()
		for _, r := range denyList {
			n := a.nr(r.nr)
			if n == none {
				continue
			}
			var args [6]uint64
			switch r.check.kind {
			case checkBitsSet:
				args[r.check.arg] = uint64(r.check.mask)
			case checkOneOf:
				args[r.check.arg] = uint64(r.check.values[0])
			case checkNoneOf:
				args[r.check.arg] = 0xdead
			}
			got, err := runFilter(prog, seccompInput{nr: uint32(n), arch: a.auditArch, args: args})
			if err != nil {
				t.Fatalf("%s/%s: %v", goarch, r.name, err)
			}
			if want := retErrno | r.check.errno; got != want {
				t.Errorf("%s/%s (nr %d): got %s, want %s", goarch, r.name, n, actionName(got), actionName(want))
			}
		}
	}
}

// model is the policy evaluated directly from the table, the way the
// assembled program is meant to behave.
func model(a archInfo, in seccompInput) uint32 {
	if in.arch != a.auditArch {
		return retKillProcess
	}
	if a.x32 && in.nr >= x32Bit {
		return retKillProcess
	}
	if in.nr > maxReviewed {
		return retErrno | errENOSYS
	}
	for _, r := range denyList {
		if n := a.nr(r.nr); n == none || uint32(n) != in.nr {
			continue
		}
		c := r.check
		v := uint32(in.args[c.arg])
		deny := false
		switch c.kind {
		case checkAlways:
			deny = true
		case checkBitsSet:
			deny = v&c.mask != 0
		case checkOneOf:
			deny = containsValue(c.values, v)
		case checkNoneOf:
			deny = !containsValue(c.values, v)
		}
		if deny {
			return retErrno | c.errno
		}
		return retAllow
	}
	return retAllow
}

func containsValue(vs []uint32, v uint32) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Every syscall number from 0 to well past the table, under several argument
// patterns, gets the model's answer: no jump lands in the wrong rule.
func TestProgramMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	patterns := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
	for range 8 {
		var p [6]uint64
		for i := range p {
			p[i] = rng.Uint64()
		}
		patterns = append(patterns, p)
	}
	for goarch, a := range arches {
		prog := mustBuild(t, goarch).Bytes()
		nrs := []uint32{x32Bit, x32Bit | 1, 0xffffffff, 0x7fffffff}
		for nr := uint32(0); nr < 1100; nr++ {
			nrs = append(nrs, nr)
		}
		for _, nr := range nrs {
			for _, args := range patterns {
				for _, arch := range []uint32{a.auditArch, auditI386, auditARM, auditX86_64, auditAArch64} {
					in := seccompInput{nr: nr, arch: arch, args: args}
					got, err := runFilter(prog, in)
					if err != nil {
						t.Fatalf("%s nr %d: %v", goarch, nr, err)
					}
					if want := model(a, in); got != want {
						t.Fatalf("%s nr %d arch %#x args %#x: program says %s, model says %s", goarch, nr, arch, args, actionName(got), actionName(want))
					}
				}
			}
		}
	}
}

func FuzzProgramMatchesModel(f *testing.F) {
	f.Add(uint32(16), uint32(auditX86_64), uint64(0), uint64(1<<32|0x5412), uint64(0))
	f.Add(uint32(56), uint32(auditX86_64), uint64(0x10000011), uint64(0), uint64(0))
	f.Add(uint32(20), uint32(auditI386), uint64(0), uint64(0), uint64(0))
	progs := map[string][]byte{}
	for goarch := range arches {
		progs[goarch] = mustBuild(f, goarch).Bytes()
	}
	f.Fuzz(func(t *testing.T, nr, arch uint32, a0, a1, a2 uint64) {
		for goarch, prog := range progs {
			in := seccompInput{nr: nr, arch: arch, args: [6]uint64{a0, a1, a2}}
			got, err := runFilter(prog, in)
			if err != nil {
				t.Fatalf("%s: %v", goarch, err)
			}
			if want := model(arches[goarch], in); got != want {
				t.Fatalf("%s nr %d arch %#x args %#x: program says %s, model says %s", goarch, nr, arch, in.args, actionName(got), actionName(want))
			}
		}
	})
}

func TestProgramWellFormed(t *testing.T) {
	for goarch := range arches {
		p := mustBuild(t, goarch)
		if err := verify(p.insns); err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		b := p.Bytes()
		if len(b) != p.Len()*8 || p.Len() < 10 || p.Len() > maxInsns {
			t.Fatalf("%s: %d instructions, %d bytes", goarch, p.Len(), len(b))
		}
		// The first instructions are the architecture check, before any rule.
		if p.insns[0] != ldAbs(offArch) || p.insns[1].code != opJeqK || p.insns[1].k != arches[goarch].auditArch || p.insns[2] != ret(retKillProcess) {
			t.Fatalf("%s: program does not start with the architecture check: %+v", goarch, p.insns[:3])
		}
		for i, in := range p.insns {
			switch in.code {
			case opJeqK, opJgtK, opJgeK, opJsetK:
				if i+1+int(in.jt) >= p.Len() || i+1+int(in.jf) >= p.Len() {
					t.Errorf("%s: instruction %d jumps out of range", goarch, i)
				}
			}
		}
		if last := p.insns[p.Len()-1]; last != ret(retAllow) {
			t.Errorf("%s: last instruction %+v is not return-allow", goarch, last)
		}
		if p.Arch() != goarch {
			t.Errorf("Arch() = %q, want %q", p.Arch(), goarch)
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	for goarch := range arches {
		a, b := mustBuild(t, goarch).Bytes(), mustBuild(t, goarch).Bytes()
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two builds differ", goarch)
		}
	}
	// Positive control: the two tables do differ, so equality above is not
	// trivially true.
	if bytes.Equal(mustBuild(t, "amd64").Bytes(), mustBuild(t, "arm64").Bytes()) {
		t.Error("amd64 and arm64 programs are identical")
	}
}

func TestBuildWithoutTable(t *testing.T) {
	for _, goarch := range []string{"386", "arm", "riscv64", "ppc64le", "s390x", "", "AMD64", "x86_64"} {
		if HasTable(goarch) {
			t.Errorf("HasTable(%q) = true", goarch)
		}
		p, err := Build(goarch)
		if err == nil || p != nil {
			t.Errorf("Build(%q) = %v, %v; want an error and no program", goarch, p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "walled-noseccomp") {
			t.Errorf("Build(%q) error %q does not say what the wall becomes", goarch, err)
		}
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		if !HasTable(goarch) {
			t.Errorf("HasTable(%q) = false", goarch)
		}
	}
}

func TestBadTablesAreErrors(t *testing.T) {
	amd := arches["amd64"]
	good := rule{"getpid", nrs{39, 172}, always(errEPERM), "test"}
	cases := map[string][]rule{
		"duplicate name":   {good, good},
		"duplicate number": {good, {"other", nrs{39, 1}, always(errEPERM), "test"}},
		"number too high":  {{"x", nrs{maxReviewed + 1, 1}, always(errEPERM), "test"}},
		"negative number":  {{"x", nrs{-5, 1}, always(errEPERM), "test"}},
		"no reason":        {{"x", nrs{39, 1}, always(errEPERM), ""}},
		"errno zero":       {{"x", nrs{39, 1}, always(0), "test"}},
		"errno too big":    {{"x", nrs{39, 1}, always(0x10000), "test"}},
		"empty mask":       {{"x", nrs{39, 1}, ifBitsSet(0, 0, errEPERM), "test"}},
		"no values":        {{"x", nrs{39, 1}, ifNoneOf(0, nil, errEPERM), "test"}},
		"arg 6":            {{"x", nrs{39, 1}, ifOneOf(6, []uint32{1}, errEPERM), "test"}},
		"nothing applies":  {{"x", nrs{none, 1}, always(errEPERM), "test"}},
		"empty list":       nil,
	}
	for name, list := range cases {
		if _, err := bindRules(amd, list); err == nil {
			t.Errorf("%s: bindRules accepted it", name)
		}
	}
	// Positive control: the same rule alone is accepted.
	if _, err := bindRules(amd, []rule{good}); err != nil {
		t.Errorf("a good one-rule table was refused: %v", err)
	}
}

func TestVerifyRejectsBrokenPrograms(t *testing.T) {
	cases := map[string][]instruction{
		"empty":          nil,
		"no final ret":   {ldAbs(offNr)},
		"jump past end":  {jmp(opJeqK, 1, 5, 0), ret(retAllow)},
		"unaligned load": {ldAbs(2), ret(retAllow)},
		"load past data": {ldAbs(64), ret(retAllow)},
		"unknown opcode": {{code: 0x07}, ret(retAllow)},
	}
	for name, p := range cases {
		if err := verify(p); err == nil {
			t.Errorf("%s: verify accepted it", name)
		}
	}
	if err := verify([]instruction{ldAbs(offNr), jmp(opJeqK, 1, 0, 1), ret(retAllow), ret(retAllow)}); err != nil {
		t.Errorf("a well-formed program was refused: %v", err)
	}
}

// The numbers in table.go agree with two independent sources: elastic's
// tables for both architectures, and golang.org/x/sys/unix for the build
// host's.
func TestTableNumbers(t *testing.T) {
	elastic := map[string]*elasticarch.Info{"amd64": elasticarch.X86_64, "arm64": elasticarch.AARCH64}
	for goarch, a := range arches {
		for _, r := range denyList {
			n := a.nr(r.nr)
			confirmed := false
			if want, ok := elastic[goarch].SyscallNames[r.name]; ok {
				if n != want {
					t.Errorf("%s/%s: table says %d, elastic says %d", goarch, r.name, n, want)
				}
				confirmed = true
			}
			if goarch == runtime.GOARCH {
				want, ok := hostNumbers[r.name]
				switch {
				case ok && n != want:
					t.Errorf("%s/%s: table says %d, x/sys says %d", goarch, r.name, n, want)
				case !ok && n != none:
					t.Errorf("%s/%s: table says %d, x/sys has no such syscall", goarch, r.name, n)
				}
				confirmed = confirmed || ok
			}
			if n != none && !confirmed {
				t.Errorf("%s/%s: number %d is confirmed by no source", goarch, r.name, n)
			}
		}
	}
}

// Errnos are spelled as numbers in table.go; they must be Linux's.
func TestErrnoValues(t *testing.T) {
	for name, pair := range map[string][2]uint32{
		"EPERM":        {errEPERM, uint32(unix.EPERM)},
		"ENOSYS":       {errENOSYS, uint32(unix.ENOSYS)},
		"EAFNOSUPPORT": {errEAFNOSUPPORT, uint32(unix.EAFNOSUPPORT)},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s = %d, want %d", name, pair[0], pair[1])
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		if _, err := Build("amd64"); err != nil {
			b.Fatal(err)
		}
	}
}
