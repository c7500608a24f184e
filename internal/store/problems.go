package store

import (
	"fmt"
	"sort"
	"time"
)

// Problem is a file in the store that the store refuses: a hand edit that
// does not parse or validate. The last good version of the object (if
// any) keeps serving until the file is fixed or removed.
type Problem struct {
	// File is the file's path.
	File string
	// Field is the first field at fault ("spec.launcher.transport"), or
	// empty when the file as a whole is wrong (a YAML syntax error).
	Field string
	// Line is the line in File where the fault is, 0 when unknown.
	Line int
	// Message says what is wrong, with every field at fault.
	Message string
	// Since is when the store first saw this content of the file.
	Since time.Time

	hash fileHash
}

func (p Problem) describe() string {
	where := ""
	switch {
	case p.Field != "" && p.Line > 0:
		where = fmt.Sprintf("%s (line %d): ", p.Field, p.Line)
	case p.Field != "":
		where = p.Field + ": "
	case p.Line > 0:
		where = fmt.Sprintf("line %d: ", p.Line)
	}
	return where + p.Message
}

// String is the problem in one line, file first.
func (p Problem) String() string { return p.File + ": " + p.describe() }

// Problems lists the files the store refuses right now, by file name.
func (s *Store) Problems() []Problem {
	s.problemsMu.Lock()
	defer s.problemsMu.Unlock()
	out := make([]Problem, 0, len(s.problems))
	for _, p := range s.problems {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

func (s *Store) problem(path string) (Problem, bool) {
	s.problemsMu.Lock()
	defer s.problemsMu.Unlock()
	p, ok := s.problems[path]
	return p, ok
}

// setProblem records a problem and says whether it is news (not the same
// content already reported), so each bad version is reported once.
func (s *Store) setProblem(p Problem) bool {
	s.problemsMu.Lock()
	defer s.problemsMu.Unlock()
	if old, ok := s.problems[p.File]; ok && old.hash == p.hash {
		return false
	}
	s.problems[p.File] = p
	return true
}

func (s *Store) clearProblem(path string) bool {
	s.problemsMu.Lock()
	defer s.problemsMu.Unlock()
	_, ok := s.problems[path]
	delete(s.problems, path)
	return ok
}
