// Package fixit keeps the in-memory records behind Fix-it cards. A card
// carries only a random ref; the add-on it is about is read from the record
// the ref names, so a copied, forged or stale card changes nothing. The
// records live only in the running controller: a card raised before a
// restart names nothing.
package fixit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// Record is what a card's ref names.
type Record struct {
	// ID is the add-on the card is about.
	ID string
	// Reason is the CamelCase reason the add-on is off.
	Reason string
	// Since is when the record was made.
	Since time.Time
}

// ErrUnknownRef is returned for a ref this controller never raised, or one
// that was already used or replaced.
var ErrUnknownRef = errors.New("this Fix-it card is not one the running controller raised (it may be from before a restart, already used, or copied); open the add-on's card again")

// Records holds the cards of the running controller.
type Records struct {
	mu   sync.Mutex
	byID map[string]string // id → ref of its current card
	refs map[string]Record
	now  func() time.Time
}

// New returns an empty set of records.
func New(now func() time.Time) *Records {
	return &Records{byID: map[string]string{}, refs: map[string]Record{}, now: now}
}

// Raise returns the ref of the add-on's card for this reason. The card
// already raised for the same id and reason keeps its ref, so a reconcile
// that finds the same failure does not churn the status.
func (r *Records) Raise(id, reason string) (string, Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref, ok := r.byID[id]; ok {
		if rec := r.refs[ref]; rec.Reason == reason {
			return ref, rec, nil
		}
		delete(r.refs, ref)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", Record{}, err
	}
	ref := hex.EncodeToString(b[:])
	rec := Record{ID: id, Reason: reason, Since: r.now()}
	r.byID[id], r.refs[ref] = ref, rec
	return ref, rec, nil
}

// Clear forgets the add-on's card: it is no longer off.
func (r *Records) Clear(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref, ok := r.byID[id]; ok {
		delete(r.refs, ref)
		delete(r.byID, id)
	}
}

// Take returns the record a ref names and forgets it, so a card is used
// once.
func (r *Records) Take(ref string) (Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.refs[ref]
	if !ok {
		return Record{}, ErrUnknownRef
	}
	delete(r.refs, ref)
	if r.byID[rec.ID] == ref {
		delete(r.byID, rec.ID)
	}
	return rec, nil
}

// Lookup returns the record a ref names without using it.
func (r *Records) Lookup(ref string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.refs[ref]
	return rec, ok
}
