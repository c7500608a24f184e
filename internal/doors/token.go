package doors

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sync"
)

// TokenBytes is the length of a door token.
const TokenBytes = 32

// TokenHeader carries the token on a door request, as EncodeToken writes
// it (64 lower-case hex characters). The walled add-on reads that text
// from the file CROW_ADDON_DOOR_TOKEN_FILE names.
const TokenHeader = "Crow-Door-Token"

// NewToken mints 32 random bytes and their sha256. Keep only the sum; the
// token goes to the walled process and nowhere else. crypto/rand.Read
// does not fail on Linux (it aborts the program instead), so there is no
// error to handle.
func NewToken() (token []byte, sum [32]byte) {
	token = make([]byte, TokenBytes)
	_, _ = rand.Read(token)
	return token, sha256.Sum256(token)
}

// EncodeToken is the token's text form: what the token file holds and
// the header carries.
func EncodeToken(token []byte) string { return hex.EncodeToString(token) }

// decodeToken reads EncodeToken's form strictly: exactly 64 lower-case
// hex characters.
func decodeToken(s string) ([]byte, bool) {
	if len(s) != 2*TokenBytes {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// Registry holds the sums of the tokens of the spawns running now, each
// with its add-on id and door set. The zero value is ready to use.
type Registry struct {
	mu     sync.Mutex
	next   uint64
	grants map[uint64]grant
}

type grant struct {
	sum     [32]byte
	addonID string
	set     Set
}

// Grant mints a token for one spawn of addonID with set, and returns it
// with the revoke function the spawn's cleanup must call (it is safe to
// call more than once). Only the token's sha256 is kept.
func (r *Registry) Grant(addonID string, set Set) (token []byte, revoke func(), err error) {
	if addonID == "" || set.Empty() || set.ID() != addonID {
		return nil, nil, errors.New("a door token needs the add-on's own, non-empty door set (no token minted; the add-on gets no doors)")
	}
	token, sum := NewToken()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.grants == nil {
		r.grants = map[uint64]grant{}
	}
	r.next++
	key := r.next
	r.grants[key] = grant{sum: sum, addonID: addonID, set: set}
	return token, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.grants, key)
	}, nil
}

// Len is the number of live grants.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.grants)
}

// authorize returns the door set a presented token (its text form) opens
// for addonID. It hashes the presented token once and compares the sum
// with every live grant's in constant time, without stopping at a match,
// so the time taken says nothing about which bytes were right.
func (r *Registry) authorize(addonID, presented string) (Set, bool) {
	tok, ok := decodeToken(presented)
	if !ok {
		return Set{}, false
	}
	sum := sha256.Sum256(tok)
	r.mu.Lock()
	defer r.mu.Unlock()
	var found Set
	match := 0
	for _, g := range r.grants {
		eq := subtle.ConstantTimeCompare(sum[:], g.sum[:])
		if eq == 1 && g.addonID == addonID {
			found = g.set
		}
		match |= eq
	}
	// A token of another add-on matched a sum but not the id: refused.
	return found, match == 1 && !found.Empty()
}
