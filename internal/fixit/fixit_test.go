package fixit

import (
	"errors"
	"testing"
	"time"
)

func TestCardsNameOnlyWhatTheyRaised(t *testing.T) {
	now := time.Unix(1700000000, 0)
	r := New(func() time.Time { return now })

	ref, rec, err := r.Raise("kb", "WallFailed")
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != "kb" || len(ref) != 32 {
		t.Fatalf("raise: ref %q rec %+v", ref, rec)
	}
	again, _, _ := r.Raise("kb", "WallFailed")
	if again != ref {
		t.Fatalf("the same failure must keep its ref: %q then %q", ref, again)
	}
	other, _, _ := r.Raise("kb", "PlanFailed")
	if other == ref {
		t.Fatal("a new reason must mint a new ref")
	}
	if _, err := r.Take(ref); !errors.Is(err, ErrUnknownRef) {
		t.Fatalf("a replaced card must name nothing, got %v", err)
	}

	// A forged ref, and a ref from another controller (a restart), name nothing.
	for _, forged := range []string{"", "kb", "00000000000000000000000000000000", other + "x"} {
		if _, err := r.Take(forged); !errors.Is(err, ErrUnknownRef) {
			t.Fatalf("forged ref %q: %v", forged, err)
		}
	}
	if _, err := New(time.Now).Take(other); !errors.Is(err, ErrUnknownRef) {
		t.Fatalf("a ref from before a restart must name nothing: %v", err)
	}

	// Positive control: the live ref names the add-on, once.
	got, err := r.Take(other)
	if err != nil || got.ID != "kb" || got.Reason != "PlanFailed" {
		t.Fatalf("take: %+v %v", got, err)
	}
	if _, err := r.Take(other); !errors.Is(err, ErrUnknownRef) {
		t.Fatalf("a card is used once: %v", err)
	}

	ref3, _, _ := r.Raise("media", "Stopped")
	r.Clear("media")
	if _, ok := r.Lookup(ref3); ok {
		t.Fatal("a cleared card must name nothing")
	}
}
