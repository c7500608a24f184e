package doors

import (
	"crypto/sha256"
	"strings"
	"sync"
	"testing"
)

// DOOR-02: tokens are 32 random bytes, unique, with their sha256.
func TestNewToken(t *testing.T) {
	seen := make(map[string]bool, 10000)
	for range 10000 {
		tok, sum := NewToken()
		if len(tok) != TokenBytes {
			t.Fatalf("token of %d bytes", len(tok))
		}
		if sum != sha256.Sum256(tok) {
			t.Fatal("the sum is not the token's sha256")
		}
		if seen[string(tok)] {
			t.Fatal("a token repeated within 10,000 mints")
		}
		seen[string(tok)] = true
	}
}

// DOOR-01 at the registry: the right token of a live spawn opens its own
// add-on's set; a wrong, revoked or other add-on's token does not.
func TestRegistryAuthorize(t *testing.T) {
	var r Registry
	kiosk, _ := Core("kiosk")
	browser, _ := Core("browser")
	kt, revokeK, err := r.Grant("kiosk", kiosk)
	if err != nil {
		t.Fatal(err)
	}
	bt, revokeB, err := r.Grant("browser", browser)
	if err != nil {
		t.Fatal(err)
	}
	defer revokeB()

	if set, ok := r.authorize("kiosk", EncodeToken(kt)); !ok || set.ID() != "kiosk" {
		t.Fatalf("positive control: kiosk's token = %v, %v", set.Doors(), ok)
	}
	wrong, _ := NewToken()
	for name, c := range map[string]struct{ id, tok string }{
		"wrong token":              {"kiosk", EncodeToken(wrong)},
		"another add-on's token":   {"kiosk", EncodeToken(bt)},
		"upper-case hex":           {"kiosk", strings.ToUpper(EncodeToken(kt))},
		"short":                    {"kiosk", EncodeToken(kt)[:63]},
		"long":                     {"kiosk", EncodeToken(kt) + "0"},
		"raw bytes, not hex":       {"kiosk", string(kt)},
		"the sum instead of token": {"kiosk", EncodeToken(sumOf(kt))},
		"empty":                    {"kiosk", ""},
	} {
		if _, ok := r.authorize(c.id, c.tok); ok {
			t.Errorf("%s: authorized", name)
		}
	}
	revokeK()
	revokeK() // idempotent
	if _, ok := r.authorize("kiosk", EncodeToken(kt)); ok {
		t.Fatal("a revoked token (a previous spawn's) still opens the door")
	}
	if _, ok := r.authorize("browser", EncodeToken(bt)); !ok {
		t.Fatal("positive control: revoking kiosk revoked browser too")
	}
	if r.Len() != 1 {
		t.Fatalf("%d grants live, want 1", r.Len())
	}
}

func TestGrantNeedsOwnSet(t *testing.T) {
	var r Registry
	kiosk, _ := Core("kiosk")
	if _, _, err := r.Grant("kiosk", kiosk); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	for name, c := range map[string]struct {
		id  string
		set Set
	}{
		"another id's set": {"browser", kiosk},
		"empty set":        {"kiosk", Set{}},
		"no id":            {"", kiosk},
	} {
		if _, _, err := r.Grant(c.id, c.set); err == nil {
			t.Errorf("%s: granted", name)
		}
	}
}

func sumOf(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// Spawns start and end while requests are checked.
func TestRegistryConcurrent(t *testing.T) {
	var r Registry
	kiosk, _ := Core("kiosk")
	live, _, _ := r.Grant("kiosk", kiosk)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				tok, revoke, err := r.Grant("kiosk", kiosk)
				if err != nil {
					t.Error(err)
					return
				}
				if _, ok := r.authorize("kiosk", EncodeToken(tok)); !ok {
					t.Error("a live token was refused")
				}
				revoke()
				if _, ok := r.authorize("kiosk", EncodeToken(tok)); ok {
					t.Error("a revoked token was accepted")
				}
				if _, ok := r.authorize("kiosk", EncodeToken(live)); !ok {
					t.Error("the long-lived token was refused")
				}
			}
		})
	}
	wg.Wait()
	if r.Len() != 1 {
		t.Fatalf("%d grants left, want 1", r.Len())
	}
}
