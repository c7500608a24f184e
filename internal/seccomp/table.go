package seccomp

// This file is the policy: every syscall the wall refuses, its number on each
// architecture that has a table, what the caller gets back, and why. The
// assembler in program.go only turns this list into BPF; a reviewer should be
// able to judge the wall from this file alone.
//
// The list is at least the union of Flatpak's blocklist (common/flatpak-run.c,
// setup_seccomp) and what Docker's default profile leaves out for a container
// without capabilities (moby profiles/seccomp/default.json). On top of that the
// program, before any rule here:
//   - kills the process for any architecture other than the native one (i386
//     through `int 0x80` on amd64, AArch32 on arm64): a deny list only holds
//     for the syscall numbers it was written for;
//   - kills the process for x32 syscalls on amd64 (nr has bit 30 set), which
//     share AUDIT_ARCH_X86_64 but use their own numbers;
//   - answers ENOSYS for any number above the highest one reviewed here
//     (maxReviewed), so a syscall added to a later kernel is refused until
//     someone reads it, and libc falls back as it does on an older kernel.
//
// Argument checks read only the lower 32 bits of an argument. That is what the
// kernel itself uses for every argument checked here (socket's family, ioctl's
// cmd and personality's persona are int/unsigned int; clone takes
// lower_32_bits(flags)), so setting the upper half can neither smuggle a value
// past a check (flatpak CVE-2019-10063, TIOCSTI | 1<<32) nor trip one.
//
// Decisions a reader might look for:
//   - unshare and setns are refused whatever their flags, as Flatpak and
//     Docker do; nothing an add-on needs calls them.
//   - chroot is refused although it needs CAP_SYS_CHROOT, which the wall drops:
//     the filter should hold even if a capability ever survives (a root
//     gateway, a bwrap bug).
//   - AF_NETLINK is refused with every other family but AF_UNIX, AF_INET and
//     AF_INET6 (Flatpak and Docker allow it). Inside the wall's network
//     namespace it could only show `lo`, while it exposes the whole netlink
//     surface (audit, generic netlink families, sock_diag, netfilter). The cost:
//     getifaddrs(3), Node's os.networkInterfaces() and Go's net.Interfaces()
//     fail with EAFNOSUPPORT inside the wall; glibc's getaddrinfo(AI_ADDRCONFIG)
//     does not (it assumes both families when netlink is unavailable).
//   - personality is allowed only for PER_LINUX, PER_LINUX32 and the query
//     value 0xffffffff: the flags that matter (ADDR_NO_RANDOMIZE,
//     READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ...) weaken exploit mitigations.
//   - clone3 answers ENOSYS, not EPERM: its flags live in memory seccomp cannot
//     read, and ENOSYS is what makes glibc (2.34+) fall back to clone, whose
//     flags the filter can check. Go's os/exec uses clone already.
//   - The new mount API answers EPERM like mount(2) (Flatpak uses ENOSYS; with
//     the old API refused too, a fallback would fail either way).
//   - statmount/listmount and listns stay allowed: they only describe what the
//     wall can already read in /proc/self/mountinfo and /proc/self/ns.

// Linux errno values. They are the same on every architecture with a table
// here; spelled out so the program does not depend on the build host's errno
// numbering.
const (
	errEPERM        = 1
	errENOSYS       = 38
	errEAFNOSUPPORT = 97
)

// nrs is a syscall's number on each architecture; none means the architecture
// has no such syscall.
type nrs struct{ amd64, arm64 int }

const none = -1

// Namespace flags of clone(2). CLONE_NEWTIME (0x80) is not here: clone takes
// the low byte as the exit signal, so the flag can only reach the kernel
// through unshare and clone3, both refused whole.
const (
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	cloneNamespaceFlags = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC |
		cloneNewUser | cloneNewPID | cloneNewNet
)

// Other argument values the rules name.
const (
	ioctlTIOCSTI   = 0x5412 // same value on amd64 and arm64 (asm-generic)
	ioctlTIOCLINUX = 0x541C

	afUNIX  = 1
	afINET  = 2
	afINET6 = 10

	perLinux   = 0x0000
	perLinux32 = 0x0008
	perQuery   = 0xffffffff
)

// maxReviewed is the highest syscall number, on every architecture with a
// table, that someone has read and either listed below or judged harmless
// (rseq_slice_yield, 471). Raise it only after reading what was added.
const maxReviewed = 471

// denyList is the policy. Order does not matter: the assembler sorts by number.
var denyList = []rule{
	// Reaching into other processes. Inside the wall that means bwrap's pid 1
	// and the in-namespace entry, whose memory and descriptors are not the
	// add-on's (SECURITY-CASES L7, PROC-04, PROC-06).
	{"ptrace", nrs{101, 117}, always(errEPERM), "attaches to and rewrites other processes in the wall (bwrap pid 1, the entry)"},
	{"process_vm_readv", nrs{310, 270}, always(errEPERM), "reads another process's memory without attaching"},
	{"process_vm_writev", nrs{311, 271}, always(errEPERM), "writes another process's memory without attaching"},
	{"pidfd_getfd", nrs{438, 438}, always(errEPERM), "copies a descriptor out of another process"},
	{"kcmp", nrs{312, 272}, always(errEPERM), "compares other processes' kernel objects; Docker refuses it without CAP_SYS_PTRACE"},
	{"process_madvise", nrs{440, 440}, always(errEPERM), "acts on another process's memory"},

	// The kernel keyring is not namespaced: a session keyring inherited from
	// the host can hold the host's keys.
	{"add_key", nrs{248, 217}, always(errEPERM), "kernel keyring, shared with the host"},
	{"keyctl", nrs{250, 219}, always(errEPERM), "kernel keyring, shared with the host"},
	{"request_key", nrs{249, 218}, always(errEPERM), "kernel keyring, shared with the host"},

	// Kernel attack surface with a record of privilege escalations.
	{"bpf", nrs{321, 280}, always(errEPERM), "eBPF verifier and JIT, a long line of privilege escalations"},
	{"perf_event_open", nrs{298, 241}, always(errEPERM), "profiling: many CVEs and side channels"},
	{"userfaultfd", nrs{323, 282}, always(errEPERM), "makes kernel races reliably exploitable"},
	{"io_uring_setup", nrs{425, 425}, always(errEPERM), "io_uring operations bypass per-syscall filtering and have had many bugs"},
	{"io_uring_enter", nrs{426, 426}, always(errEPERM), "io_uring, as io_uring_setup"},
	{"io_uring_register", nrs{427, 427}, always(errEPERM), "io_uring, as io_uring_setup"},
	{"fanotify_init", nrs{300, 262}, always(errEPERM), "filesystem-wide event monitoring"},
	{"name_to_handle_at", nrs{303, 264}, always(errEPERM), "file handles name files outside the path walk that binds and masks rely on"},
	{"open_by_handle_at", nrs{304, 265}, always(errEPERM), "opens by handle, skipping binds and masks (the Docker 'shocker' escape)"},
	{"lookup_dcookie", nrs{212, 18}, always(errEPERM), "profiling interface that names kernel objects"},
	{"modify_ldt", nrs{154, none}, always(errEPERM), "x86 LDT, a historic source of kernel leaks; Flatpak refuses it"},
	{"iopl", nrs{172, none}, always(errEPERM), "raw I/O port access"},
	{"ioperm", nrs{173, none}, always(errEPERM), "raw I/O port access"},
	{"uselib", nrs{134, none}, always(errEPERM), "obsolete a.out library loader"},
	{"get_mempolicy", nrs{239, 236}, always(errEPERM), "NUMA policy; Flatpak and Docker refuse the family"},
	{"set_mempolicy", nrs{238, 237}, always(errEPERM), "NUMA policy; Flatpak and Docker refuse the family"},
	{"set_mempolicy_home_node", nrs{450, 450}, always(errEPERM), "NUMA policy; Docker refuses the family"},
	{"mbind", nrs{237, 235}, always(errEPERM), "NUMA policy; Flatpak and Docker refuse the family"},
	{"migrate_pages", nrs{256, 238}, always(errEPERM), "moves another process's pages between NUMA nodes"},
	{"move_pages", nrs{279, 239}, always(errEPERM), "moves another process's pages between NUMA nodes"},

	// Host-wide state: the kernel, modules, clock, logs, quotas, swap.
	{"kexec_load", nrs{246, 104}, always(errEPERM), "replaces the running kernel"},
	{"kexec_file_load", nrs{320, 294}, always(errEPERM), "replaces the running kernel"},
	{"init_module", nrs{175, 105}, always(errEPERM), "loads kernel code"},
	{"finit_module", nrs{313, 273}, always(errEPERM), "loads kernel code"},
	{"delete_module", nrs{176, 106}, always(errEPERM), "unloads kernel code"},
	{"create_module", nrs{174, none}, always(errEPERM), "obsolete module interface"},
	{"get_kernel_syms", nrs{177, none}, always(errEPERM), "obsolete module interface"},
	{"query_module", nrs{178, none}, always(errEPERM), "obsolete module interface"},
	{"acct", nrs{163, 89}, always(errEPERM), "switches the host's process accounting"},
	{"swapon", nrs{167, 224}, always(errEPERM), "host swap"},
	{"swapoff", nrs{168, 225}, always(errEPERM), "host swap"},
	{"reboot", nrs{169, 142}, always(errEPERM), "reboots or halts the host"},
	{"settimeofday", nrs{164, 170}, always(errEPERM), "the clock is not namespaced"},
	{"clock_settime", nrs{227, 112}, always(errEPERM), "the clock is not namespaced"},
	{"adjtimex", nrs{159, 171}, always(errEPERM), "the clock is not namespaced"},
	{"clock_adjtime", nrs{305, 266}, always(errEPERM), "the clock is not namespaced"},
	{"syslog", nrs{103, 116}, always(errEPERM), "the kernel log shows kernel addresses and host activity"},
	{"quotactl", nrs{179, 60}, always(errEPERM), "host quota state"},
	{"quotactl_fd", nrs{443, 443}, always(errEPERM), "host quota state"},
	{"vhangup", nrs{153, 58}, always(errEPERM), "hangs up the terminal"},
	{"sethostname", nrs{170, 161}, always(errEPERM), "the wall's host name is fixed"},
	{"setdomainname", nrs{171, 162}, always(errEPERM), "the wall's domain name is fixed"},
	{"nfsservctl", nrs{180, 42}, always(errEPERM), "obsolete NFS server interface"},
	{"_sysctl", nrs{156, none}, always(errEPERM), "obsolete sysctl interface"},
	{"sysfs", nrs{139, none}, always(errEPERM), "obsolete filesystem-type query Docker refuses"},
	{"ustat", nrs{136, none}, always(errEPERM), "obsolete filesystem query Docker refuses"},

	// Namespaces and mounts: the wall's shape must not change from inside
	// (SECURITY-CASES L6, PROC-08, PROC-09, FS-13).
	{"unshare", nrs{272, 97}, always(errEPERM), "new namespaces; a user namespace brings back every capability and nf_tables"},
	{"setns", nrs{308, 268}, always(errEPERM), "joins another namespace"},
	{"clone", nrs{56, 220}, ifBitsSet(0, cloneNamespaceFlags, errEPERM), "new namespaces through clone's flags; plain fork and threads pass"},
	{"clone3", nrs{435, 435}, always(errENOSYS), "flags in memory seccomp cannot read; ENOSYS makes libc fall back to clone"},
	{"mount", nrs{165, 40}, always(errEPERM), "changes the wall's mounts (would unmask .env, remount binds rw)"},
	{"umount2", nrs{166, 39}, always(errEPERM), "removes a mask or a bind"},
	{"pivot_root", nrs{155, 41}, always(errEPERM), "changes the wall's root"},
	{"chroot", nrs{161, 51}, always(errEPERM), "changes root; harmless without CAP_SYS_CHROOT, refused in case one survives"},
	{"open_tree", nrs{428, 428}, always(errEPERM), "new mount API (flatpak CVE-2021-41133)"},
	{"open_tree_attr", nrs{467, 467}, always(errEPERM), "new mount API"},
	{"move_mount", nrs{429, 429}, always(errEPERM), "new mount API"},
	{"fsopen", nrs{430, 430}, always(errEPERM), "new mount API"},
	{"fsconfig", nrs{431, 431}, always(errEPERM), "new mount API"},
	{"fsmount", nrs{432, 432}, always(errEPERM), "new mount API"},
	{"fspick", nrs{433, 433}, always(errEPERM), "new mount API"},
	{"mount_setattr", nrs{442, 442}, always(errEPERM), "new mount API; would clear read-only on a bind"},

	// The terminal: pushing input into a terminal outside the wall
	// (CVE-2017-5226; TIOCLINUX, CVE-2023-28100).
	{"ioctl", nrs{16, 29}, ifOneOf(1, []uint32{ioctlTIOCSTI, ioctlTIOCLINUX}, errEPERM), "TIOCSTI and TIOCLINUX type into the terminal outside the wall"},

	// Socket families: the wall's network is loopback and the relay.
	{"socket", nrs{41, 198}, ifNoneOf(0, []uint32{afUNIX, afINET, afINET6}, errEAFNOSUPPORT), "only AF_UNIX, AF_INET, AF_INET6: not vsock (the VM host), netlink, packet, alg, ..."},
	{"socketpair", nrs{53, 199}, ifNoneOf(0, []uint32{afUNIX, afINET, afINET6}, errEAFNOSUPPORT), "same families as socket"},

	// Execution domains that switch off exploit mitigations.
	{"personality", nrs{135, 92}, ifNoneOf(0, []uint32{perLinux, perLinux32, perQuery}, errEPERM), "ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC and friends weaken mitigations"},
}
