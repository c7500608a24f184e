// Package store is the file-backed object store that controller-runtime
// runs on with no API server: one YAML file per object under a folder, with
// API-server semantics (resourceVersion, conflicts, generation, the status
// subresource, schema validation from the generated CRDs, finalizers,
// watches), a controller-runtime client and cache over it, an event
// recorder that writes core/v1 Events into it, and hand edits of its files
// picked up as updates.
//
// Layout: <dir>/<group>/<plural>/<namespace>/<name>.yaml (cluster-scoped
// kinds without the namespace level; the core group is "core"), folders
// 0700, files 0600, plus <dir>/.resourceversion (the counter) and
// <dir>/.lock (one writing process at a time).
//
// Owner files: when the store writes an object back, it edits the file's
// existing YAML node tree rather than marshalling afresh, so an owner's
// comments and key order survive (blank lines and indentation are
// normalised). A write that leaves spec alone (a status write, a label)
// touches only the metadata and status nodes, so the owner's spec keeps
// its exact text. This keeps one object in one file, which the owner can
// read whole and which is replaced atomically; a status file beside it
// would split an object across two files that cannot be replaced
// together, and could be orphaned or go stale on its own.
//
// Hand edits: a changed file is read only once it has settled — no
// process holds it open for writing (asked of the kernel with a read
// lease) and two reads a moment apart agree — because editors and shell
// redirection truncate and then write, and a half-written file often
// still parses. It is applied only if it is still the file's content
// under the write lock, so a late read can never undo the store's own
// write. A spec change is an update (new resourceVersion, generation
// bump); status and versions written by hand are ignored (status belongs
// to the controller). A file that does not parse or validate is reported
// (log, a Warning Event on the object, Problems) and the last good version
// keeps serving; the store then refuses to overwrite that file until it is
// fixed. A file gone for 200 ms is a delete (editors that save by rename
// leave a shorter gap).
package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Store is a file-backed object store. It is safe for concurrent use.
type Store struct {
	dir      string
	scheme   *runtime.Scheme
	mapper   meta.RESTMapper
	kinds    map[schema.GroupVersionKind]*kindInfo
	byFolder map[[2]string]*kindInfo // {group folder, plural} → kind
	log      logr.Logger
	opts     options

	lockFile *os.File
	rv       *rvCounter

	// writeMu serialises every change (client writes and ingested hand
	// edits), so versions are handed out and published in one order.
	writeMu sync.Mutex

	// mu guards the in-memory view below; it is held only briefly.
	mu       sync.RWMutex
	objects  map[*kindInfo]map[objKey]*entry
	history  []change
	floor    uint64 // every change with rv > floor is in history
	lastRV   uint64 // newest committed change
	watchers map[*watcher]struct{}

	problemsMu sync.Mutex
	problems   map[string]Problem

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	files *fileWatcher

	closeOnce sync.Once
	closed    chan struct{}
}

// objKey names an object within its kind.
type objKey struct{ namespace, name string }

// entry is one object as the store serves it: its last good version.
type entry struct {
	kind  *kindInfo
	key   objKey
	rv    uint64
	obj   map[string]any // canonical, read-only
	typed runtime.Object // canonical, read-only, GVK set
	// fileHash is the hash of the file as the store last wrote or
	// ingested it; a file event whose content hashes the same is the
	// store's own write (or a touch) and is not an edit.
	fileHash fileHash
	// fileGone marks an object whose file the owner removed while
	// finalizers still hold it: it lives on in memory until they are
	// removed, and is not written back to disk.
	fileGone bool
}

// Option configures Open.
type Option func(*options)

type options struct {
	log            logr.Logger
	logSet         bool
	readOnly       bool
	watchFiles     bool
	maxEventsPerNS int
	historySize    int
	settle         time.Duration
	now            func() time.Time
}

// WithLogger sets the logger (default: controller-runtime's log, named "store").
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log, o.logSet = l, true } }

// ReadOnly opens the store for reading only: no lock is taken (a running
// controller may hold it), and every write fails. For the CLI.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// WithoutFileWatch does not watch the folder for hand edits; the store
// serves what it loaded at Open and what it writes itself. For one-shot
// CLI commands.
func WithoutFileWatch() Option { return func(o *options) { o.watchFiles = false } }

// WithMaxEventsPerNamespace bounds the core/v1 Events kept per namespace
// (default 200); the oldest are pruned.
func WithMaxEventsPerNamespace(n int) Option { return func(o *options) { o.maxEventsPerNS = n } }

// WithHistory sets how many changes the store keeps for watches that
// resume from a resourceVersion (default 10000); a watch from an older
// version gets 410 Gone and relists.
func WithHistory(n int) Option { return func(o *options) { o.historySize = n } }

var errReadOnly = errors.New("the store was opened read-only")

// Open opens (creating if needed) the store in dir. The scheme must know
// the API kinds to serve; core/v1 is added to it for events if missing.
// Unless ReadOnly, Open takes an exclusive lock on the store: a second
// writing process fails here rather than racing the first. Close releases
// everything.
func Open(dir string, scheme *runtime.Scheme, opts ...Option) (*Store, error) {
	o := options{
		watchFiles:     true,
		maxEventsPerNS: 200,
		historySize:    10000,
		settle:         15 * time.Millisecond,
		now:            time.Now,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if !o.logSet {
		o.log = ctrllog.Log.WithName("store")
	}
	if scheme == nil {
		return nil, errors.New("open store: scheme is nil")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	kinds, mapper, err := buildKinds(scheme)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	s := &Store{
		dir:      abs,
		scheme:   scheme,
		mapper:   mapper,
		kinds:    kinds,
		byFolder: map[[2]string]*kindInfo{},
		log:      o.log,
		opts:     o,
		objects:  map[*kindInfo]map[objKey]*entry{},
		watchers: map[*watcher]struct{}{},
		problems: map[string]Problem{},
		closed:   make(chan struct{}),
	}
	for _, k := range kinds {
		s.byFolder[[2]string{k.groupDir, k.resource}] = k
		s.objects[k] = map[objKey]*entry{}
	}

	if !o.readOnly {
		if err := ensureDir(abs); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		if err := s.lock(); err != nil {
			return nil, err
		}
		for _, k := range kinds {
			for _, d := range []string{filepath.Dir(k.dir(abs, "")), k.dir(abs, "")} {
				if err := ensureDir(d); err != nil {
					s.unlock()
					return nil, fmt.Errorf("open store: %w", err)
				}
			}
		}
	}
	if s.rv, err = openRV(abs, o.readOnly); err != nil {
		s.unlock()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.startEvents()
	if o.watchFiles {
		// Watch before loading, so that an edit made while loading is
		// seen either by the load or by the watch.
		if s.files, err = newFileWatcher(s); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if err := s.loadAll(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	if s.files != nil {
		s.files.start()
	}
	return s, nil
}

func (s *Store) lock() error {
	path := filepath.Join(s.dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("open store: open lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("open store: %s is in use by another addonwall process (lock %s); stop it first, or open read-only", s.dir, path)
		}
		return fmt.Errorf("open store: lock %s: %w", path, err)
	}
	s.lockFile = f
	return nil
}

func (s *Store) unlock() {
	if s.lockFile != nil {
		_ = s.lockFile.Close()
		s.lockFile = nil
	}
}

// Close stops the file watch, the event recorder and every watch, and
// releases the lock. The store must not be used afterwards.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.files != nil {
			s.files.stop()
		}
		if s.broadcaster != nil {
			s.broadcaster.Shutdown()
		}
		s.mu.Lock()
		for w := range s.watchers {
			w.stopLocked()
		}
		s.mu.Unlock()
		s.writeMu.Lock()
		s.unlock()
		s.writeMu.Unlock()
	})
	return nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Scheme is the scheme the store decodes with.
func (s *Store) Scheme() *runtime.Scheme { return s.scheme }

// RESTMapper is the store's static RESTMapper.
func (s *Store) RESTMapper() meta.RESTMapper { return s.mapper }

// PathFor is the file that holds (or would hold) an object of the kind
// of obj, for the CLI and for owners who want to edit it.
func (s *Store) PathFor(obj runtime.Object, namespace, name string) (string, error) {
	k, err := s.kindFor(obj)
	if err != nil {
		return "", err
	}
	if k.namespaced && namespace == "" {
		return "", fmt.Errorf("%s is namespaced: give a namespace", k.gvk.Kind)
	}
	if !k.namespaced {
		namespace = ""
	}
	return k.path(s.dir, objKey{namespace, name}), nil
}

func (s *Store) now() metav1.Time {
	return metav1.NewTime(s.opts.now().UTC().Truncate(time.Second))
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

func (s *Store) ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed() {
		return errors.New("the store is closed")
	}
	return nil
}
