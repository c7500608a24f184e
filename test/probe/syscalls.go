package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/addonwall/addonwall/test/probe/report"
	"golang.org/x/sys/unix"
)

// Each attempt runs in a child process of its own (`probe __try NAME`), so a
// call the filter answers by killing (a foreign ABI) costs the child, not the
// report, and a call that changes process state (PTRACE_TRACEME, personality)
// changes only the child.
//
// Every attempt is harmless when it gets through, even for root outside a
// wall: the probe is also run by hand and by unwalled tests.
//
// Arguments are chosen the way flatpak's tests/try-syscall.c chooses them:
// so that the call, when the filter lets it through, fails harmlessly with an
// error the filter never returns (EBADF, EFAULT, EINVAL, ESRCH) or succeeds
// without effect. A refusal errno (EPERM, ENOSYS, EAFNOSUPPORT) is then the
// filter's. Where the kernel itself answers EPERM first (calls that check a
// capability before their arguments) the attempt is still made and reported;
// telling the filter apart there is left to the unit test of the program.

type attempt struct {
	name    string
	call    string
	control bool
	// skip, when not empty, is why the attempt does not apply here.
	skip string
	run  func() (uintptr, unix.Errno)
}

const (
	badFD  = ^uintptr(0) // -1 as an int argument
	noPID  = 0x3ffffffe  // above pid_max: ESRCH when the call gets through
	tryEnv = "GODEBUG=asyncpreemptoff=1"
)

func sys(nr uintptr, args ...uintptr) func() (uintptr, unix.Errno) {
	var a [6]uintptr
	copy(a[:], args)
	return func() (uintptr, unix.Errno) {
		r, _, e := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return r, e
	}
}

func attempts() []attempt {
	list := []attempt{
		// Positive controls on the same paths as the refusals below.
		{name: "getpid", call: "getpid()", control: true, run: sys(unix.SYS_GETPID)},
		{name: "spawn_plain", call: "fork+exec without namespace flags", control: true, run: spawn(0)},
		{name: "socket_unix", call: "socket(AF_UNIX, SOCK_STREAM, 0)", control: true, run: sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_inet", call: "socket(AF_INET, SOCK_STREAM, 0)", control: true, run: sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_inet6", call: "socket(AF_INET6, SOCK_STREAM, 0)", control: true, run: sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		{name: "ioctl_tcgets", call: "ioctl(-1, TCGETS)", control: true, run: sys(unix.SYS_IOCTL, badFD, unix.TCGETS, 0)},
		{name: "personality_query", call: "personality(0xffffffff)", control: true, run: sys(unix.SYS_PERSONALITY, 0xffffffff)},

		// Other processes (PROC-04, PROC-06).
		{name: "ptrace_traceme", call: "ptrace(PTRACE_TRACEME)", run: sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME)},
		{name: "ptrace_attach_nopid", call: "ptrace(PTRACE_ATTACH, 0x3ffffffe)", run: sys(unix.SYS_PTRACE, unix.PTRACE_ATTACH, noPID)},
		// A seize does not stop the tracee, and the try child's exit
		// detaches it, so the wall is not wedged (L7).
		{name: "ptrace_seize_pid1", call: "ptrace(PTRACE_SEIZE, 1)", skip: outsideWall, run: sys(unix.SYS_PTRACE, unix.PTRACE_SEIZE, 1)},
		{name: "ptrace_seize_parent", call: "ptrace(PTRACE_SEIZE, getppid())", skip: outsideWall, run: seizeParent},
		{name: "process_vm_readv", call: "process_vm_readv(self, NULL, 0, NULL, 0, 1)", run: sys(unix.SYS_PROCESS_VM_READV, uintptr(os.Getpid()), 0, 0, 0, 0, 1)},
		{name: "process_vm_writev", call: "process_vm_writev(self, NULL, 0, NULL, 0, 1)", run: sys(unix.SYS_PROCESS_VM_WRITEV, uintptr(os.Getpid()), 0, 0, 0, 0, 1)},
		{name: "pidfd_getfd", call: "pidfd_getfd(-1, 0, 0)", run: sys(unix.SYS_PIDFD_GETFD, badFD, 0, 0)},
		{name: "kcmp", call: "kcmp(self, self, 0xff, 0, 0)", run: sys(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(os.Getpid()), 0xff, 0, 0)},
		{name: "process_madvise", call: "process_madvise(-1, NULL, 0, 0, 0)", run: sys(unix.SYS_PROCESS_MADVISE, badFD, 0, 0, 0, 0)},

		// Keyring (L9).
		{name: "keyctl_badop", call: "keyctl(0xffff)", run: sys(unix.SYS_KEYCTL, 0xffff)},
		{name: "keyctl_session", call: "keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)", run: sys(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0)},
		{name: "add_key", call: "add_key(NULL, NULL, NULL, 0, 0)", run: sys(unix.SYS_ADD_KEY)},
		{name: "request_key", call: "request_key(NULL, NULL, NULL, 0)", run: sys(unix.SYS_REQUEST_KEY)},

		// Kernel surface (PROC-11, PROC-12).
		{name: "bpf", call: "bpf(0x7fff, NULL, 0)", run: sys(unix.SYS_BPF, 0x7fff, 0, 0)},
		{name: "perf_event_open", call: "perf_event_open(NULL, 0, -1, -1, 0)", run: sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, badFD, badFD, 0)},
		{name: "userfaultfd", call: "userfaultfd(UFFD_USER_MODE_ONLY|0x100000)", run: sys(unix.SYS_USERFAULTFD, 1|0x100000)},
		{name: "io_uring_setup", call: "io_uring_setup(1, NULL)", run: sys(unix.SYS_IO_URING_SETUP, 1, 0)},
		{name: "io_uring_enter", call: "io_uring_enter(-1, 0, 0, 0, NULL, 0)", run: sys(unix.SYS_IO_URING_ENTER, badFD, 0, 0, 0, 0, 0)},
		{name: "io_uring_register", call: "io_uring_register(-1, 0, NULL, 0)", run: sys(unix.SYS_IO_URING_REGISTER, badFD, 0, 0, 0)},
		{name: "fanotify_init", call: "fanotify_init(0, 0)", run: sys(unix.SYS_FANOTIFY_INIT, 0, 0)},
		{name: "name_to_handle_at", call: "name_to_handle_at(-1, NULL, NULL, NULL, 0)", run: sys(unix.SYS_NAME_TO_HANDLE_AT, badFD, 0, 0, 0, 0)},
		{name: "open_by_handle_at", call: "open_by_handle_at(-1, NULL, 0)", run: sys(unix.SYS_OPEN_BY_HANDLE_AT, badFD, 0, 0)},
		// Zero segments would unload a loaded kexec image; 1000 is over
		// KEXEC_SEGMENT_MAX. 0x8000 is no kexec_file_load flag.
		{name: "kexec_load", call: "kexec_load(0, 1000, NULL, 0)", run: sys(unix.SYS_KEXEC_LOAD, 0, 1000, 0, 0)},
		{name: "kexec_file_load", call: "kexec_file_load(-1, -1, 0, NULL, 0x8000)", run: sys(unix.SYS_KEXEC_FILE_LOAD, badFD, badFD, 0, 0, 0x8000)},
		{name: "init_module", call: "init_module(NULL, 0, NULL)", run: sys(unix.SYS_INIT_MODULE, 0, 0, 0)},
		{name: "finit_module", call: "finit_module(-1, NULL, 0)", run: sys(unix.SYS_FINIT_MODULE, badFD, 0, 0)},
		{name: "delete_module", call: "delete_module(NULL, 0)", run: sys(unix.SYS_DELETE_MODULE, 0, 0)},
		{name: "get_mempolicy", call: "get_mempolicy(NULL, NULL, 0, 0, 0)", run: sys(unix.SYS_GET_MEMPOLICY, 0, 0, 0, 0, 0)},
		{name: "move_pages", call: "move_pages(0, 0, NULL, NULL, NULL, 0)", run: sys(unix.SYS_MOVE_PAGES, 0, 0, 0, 0, 0, 0)},

		// Namespaces and mounts (PROC-08, PROC-09, FS-13).
		{name: "unshare_newuser", call: "unshare(CLONE_NEWUSER)", run: sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)},
		{name: "unshare_newns", call: "unshare(CLONE_NEWNS)", run: sys(unix.SYS_UNSHARE, unix.CLONE_NEWNS)},
		{name: "setns_badfd", call: "setns(-1, 0)", run: sys(unix.SYS_SETNS, badFD, 0)},
		{name: "setns_pid1_net", call: "setns(open(/proc/1/ns/net), CLONE_NEWNET)", run: setnsPid1Net},
		{name: "spawn_newuser", call: "fork+exec with CLONE_NEWUSER", run: spawn(unix.CLONE_NEWUSER)},
		{name: "spawn_newnet", call: "fork+exec with CLONE_NEWNET", run: spawn(unix.CLONE_NEWNET)},
		{name: "clone3", call: "clone3(NULL, 0)", run: sys(unix.SYS_CLONE3, 0, 0)},
		{name: "mount", call: "mount(NULL, NULL, NULL, 0, NULL)", run: sys(unix.SYS_MOUNT, 0, 0, 0, 0, 0)},
		{name: "umount2", call: "umount2(NULL, 0x100)", run: sys(unix.SYS_UMOUNT2, 0, 0x100)},
		{name: "pivot_root", call: "pivot_root(NULL, NULL)", run: sys(unix.SYS_PIVOT_ROOT, 0, 0)},
		{name: "chroot", call: "chroot(NULL)", run: sys(unix.SYS_CHROOT, 0)},
		{name: "open_tree", call: "open_tree(-1, NULL, 0xffffffff)", run: sys(unix.SYS_OPEN_TREE, badFD, 0, 0xffffffff)},
		{name: "move_mount", call: "move_mount(-1, NULL, -1, NULL, 0xffffffff)", run: sys(unix.SYS_MOVE_MOUNT, badFD, 0, badFD, 0, 0xffffffff)},
		{name: "fsopen", call: "fsopen(NULL, 0xffffffff)", run: sys(unix.SYS_FSOPEN, 0, 0xffffffff)},
		{name: "fsconfig", call: "fsconfig(-1, 0xff, NULL, NULL, 0)", run: sys(unix.SYS_FSCONFIG, badFD, 0xff, 0, 0, 0)},
		{name: "fsmount", call: "fsmount(-1, 0xffffffff, 0)", run: sys(unix.SYS_FSMOUNT, badFD, 0xffffffff, 0)},
		{name: "fspick", call: "fspick(-1, NULL, 0xffffffff)", run: sys(unix.SYS_FSPICK, badFD, 0, 0xffffffff)},
		{name: "mount_setattr", call: "mount_setattr(-1, NULL, 0xffffffff, NULL, 0)", run: sys(unix.SYS_MOUNT_SETATTR, badFD, 0, 0xffffffff, 0, 0)},
		{name: "open_tree_attr", call: "open_tree_attr(-1, NULL, 0xffffffff, NULL, 0)", run: sys(unix.SYS_OPEN_TREE_ATTR, badFD, 0, 0xffffffff, 0, 0)},

		// The terminal (CVE-2017-5226, CVE-2019-10063, CVE-2023-28100).
		{name: "ioctl_tiocsti", call: "ioctl(-1, TIOCSTI)", run: sys(unix.SYS_IOCTL, badFD, unix.TIOCSTI, 0)},
		{name: "ioctl_tiocsti_high", call: "ioctl(-1, TIOCSTI|1<<32)", run: sys(unix.SYS_IOCTL, badFD, 1<<32|unix.TIOCSTI, 0)},
		{name: "ioctl_tioclinux", call: "ioctl(-1, TIOCLINUX)", run: sys(unix.SYS_IOCTL, badFD, unix.TIOCLINUX, 0)},

		// Socket families (PROC-13).
		{name: "socket_vsock", call: "socket(AF_VSOCK, SOCK_STREAM, 0)", run: sys(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_vsock_high", call: "socket(AF_VSOCK|1<<32, SOCK_STREAM, 0)", run: sys(unix.SYS_SOCKET, 1<<32|unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_netlink", call: "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", run: sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)},
		{name: "socket_packet", call: "socket(AF_PACKET, SOCK_RAW, 0)", run: sys(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_alg", call: "socket(AF_ALG, SOCK_SEQPACKET, 0)", run: sys(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)},
		{name: "socket_key", call: "socket(AF_KEY, SOCK_RAW, 2)", run: sys(unix.SYS_SOCKET, unix.AF_KEY, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 2)},
		{name: "socketpair_netlink", call: "socketpair(AF_NETLINK, SOCK_RAW, 0, NULL)", run: sys(unix.SYS_SOCKETPAIR, unix.AF_NETLINK, unix.SOCK_RAW, 0, 0)},

		// Mitigations and host state.
		{name: "personality_no_aslr", call: "personality(ADDR_NO_RANDOMIZE)", run: sys(unix.SYS_PERSONALITY, 0x0040000)},
		{name: "settimeofday", call: "settimeofday(NULL, NULL)", run: sys(unix.SYS_SETTIMEOFDAY, 0, 0)},
		{name: "clock_settime", call: "clock_settime(CLOCK_MONOTONIC, NULL)", run: sys(unix.SYS_CLOCK_SETTIME, unix.CLOCK_MONOTONIC, 0)},
		{name: "adjtimex", call: "adjtimex(NULL)", run: sys(unix.SYS_ADJTIMEX, 0)},
		{name: "clock_adjtime", call: "clock_adjtime(CLOCK_REALTIME, NULL)", run: sys(unix.SYS_CLOCK_ADJTIME, unix.CLOCK_REALTIME, 0)},
		{name: "syslog", call: "syslog(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0)", run: sys(unix.SYS_SYSLOG, 10, 0, 0)},
		// acct(NULL) would switch accounting off; address 1 faults instead.
		{name: "acct", call: "acct((char *)1)", run: sys(unix.SYS_ACCT, 1)},
		{name: "swapon", call: "swapon(NULL, 0)", run: sys(unix.SYS_SWAPON, 0, 0)},
		{name: "reboot", call: "reboot(0, 0, 0, NULL) (bad magic)", run: sys(unix.SYS_REBOOT, 0, 0, 0, 0)},
		{name: "quotactl", call: "quotactl(0, NULL, 0, NULL)", run: sys(unix.SYS_QUOTACTL, 0, 0, 0, 0)},
		{name: "lookup_dcookie", call: "lookup_dcookie(0, NULL, 0)", run: sys(unix.SYS_LOOKUP_DCOOKIE, 0, 0, 0)},
		{name: "vhangup", call: "setsid(); vhangup()", run: vhangupDetached},
		// A length of 0 would set an empty host name; 1000 is over the limit.
		{name: "sethostname", call: "sethostname(NULL, 1000)", run: sys(unix.SYS_SETHOSTNAME, 0, 1000)},
		// Past the reviewed table; the kernel has nothing there either, so
		// both answers are ENOSYS: a record, not evidence.
		{name: "unreviewed_nr", call: "syscall(1000)", run: sys(1000)},
	}
	return append(list, archAttempts()...)
}

// spawn starts `probe __try getpid` with extra clone flags: Go's os/exec
// passes SysProcAttr.Cloneflags to clone(2), which is what the filter checks.
func spawn(flags uintptr) func() (uintptr, unix.Errno) {
	return func() (uintptr, unix.Errno) {
		cmd := exec.Command("/proc/self/exe", "__try", "getpid")
		cmd.Env = append(os.Environ(), tryEnv)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		if err := cmd.Run(); err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) {
				return 0, unix.Errno(errno)
			}
			return 0, unix.EIO
		}
		return 0, 0
	}
}

// outsideWall is set when the probe runs in the initial pid namespace: there
// pid 1 is the host's init, which the probe leaves alone.
var outsideWall = func() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "cannot tell whether this is a wall: " + errName(err)
	}
	// PROC_PID_INIT_INO, the initial pid namespace's fixed inode.
	if l == "pid:[4026531836]" {
		return "not inside a wall (initial pid namespace)"
	}
	return ""
}()

// vhangupDetached leaves the controlling terminal first, so that a probe run
// by hand with privileges does not hang up the terminal it was started from.
func vhangupDetached() (uintptr, unix.Errno) {
	if _, err := unix.Setsid(); err != nil {
		return 0, errnoOf(err)
	}
	return sys(unix.SYS_VHANGUP)()
}

func seizeParent() (uintptr, unix.Errno) {
	return sys(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(os.Getppid()))()
}

func setnsPid1Net() (uintptr, unix.Errno) {
	fd, err := unix.Open("/proc/1/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, errnoOf(err)
	}
	return sys(unix.SYS_SETNS, uintptr(fd), unix.CLONE_NEWNET)()
}

func errnoOf(err error) unix.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.Errno(errno)
	}
	return unix.EIO
}

// tryResult is what a try child prints.
type tryResult struct {
	Ret   int64  `json:"ret"`
	Errno string `json:"errno,omitempty"`
	// Fault is set when the attempt faulted and the child caught it (see
	// int80_getpid); the parent reports it as the signal.
	Fault string `json:"fault,omitempty"`
}

// runTry is the child side: make one attempt and print its result.
func runTry(name string) int {
	for _, a := range attempts() {
		if a.name != name || a.run == nil {
			continue
		}
		// The call must come from this thread (ptrace is per thread), and
		// a refusal by kill must not leave a core file behind.
		runtime.LockOSThread()
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
		_ = json.NewEncoder(os.Stdout).Encode(tryAttempt(a))
		return 0
	}
	fmt.Fprintf(os.Stderr, "probe: no attempt named %q\n", name)
	return 2
}

func tryAttempt(a attempt) (res tryResult) {
	defer func() {
		if v := recover(); v != nil {
			// Only a fault turned into a panic by debug.SetPanicOnFault
			// lands here; the runtime reports faults as SIGSEGV or SIGBUS.
			res = tryResult{Ret: -1, Fault: "SIGSEGV"}
			if err, ok := v.(error); ok && strings.Contains(err.Error(), "SIGBUS") {
				res.Fault = "SIGBUS"
			}
		}
	}()
	r, e := a.run()
	res = tryResult{Ret: int64(r)}
	if e != 0 {
		res.Ret = -1
		res.Errno = unix.ErrnoName(e)
		if res.Errno == "" {
			res.Errno = fmt.Sprintf("errno%d", int(e))
		}
	}
	return res
}

// runAttempts is the parent side.
func runAttempts(ctx context.Context) []report.Syscall {
	var out []report.Syscall
	for _, a := range attempts() {
		s := report.Syscall{Name: a.name, Call: a.call, Control: a.control}
		if a.skip != "" {
			s.Skipped = a.skip
			out = append(out, s)
			continue
		}
		tryOne(ctx, a.name, &s)
		out = append(out, s)
	}
	return out
}

func tryOne(ctx context.Context, name string, s *report.Syscall) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/proc/self/exe", "__try", name)
	// Asynchronous preemption signals a thread; a thread that has just made
	// itself a tracee would stop on it and wait for a tracer that never acts.
	cmd.Env = append(os.Environ(), tryEnv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState != nil {
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s.Signal = unix.SignalName(ws.Signal())
			if ctx.Err() != nil {
				s.Failure = "timed out after 10s"
			}
			return
		}
	}
	if err != nil {
		s.Failure = fmt.Sprintf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
		return
	}
	var res tryResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		s.Failure = fmt.Sprintf("unreadable result %q: %v", stdout.String(), err)
		return
	}
	s.Ret, s.Errno, s.Signal = res.Ret, res.Errno, res.Fault
}
