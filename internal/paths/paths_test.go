package paths

import (
	"testing"
)

func TestResolveOrder(t *testing.T) {
	env := map[string]string{"HOME": "/home/o", "CROW_HOME": "/srv/crow", "CROW_APP_ROOT": "/opt/crow"}
	get := func(k string) string { return env[k] }

	p, err := Resolve(Flags{}, get)
	if err != nil {
		t.Fatal(err)
	}
	want := Paths{CrowHome: "/srv/crow", DataDir: "/home/o/.crow/data", Checkout: "/opt/crow", Store: "/srv/crow/addonwall/store"}
	if p != want {
		t.Fatalf("env: got %+v, want %+v (the data dir must not derive from CROW_HOME)", p, want)
	}

	p, err = Resolve(Flags{CrowHome: "/x", Store: "/s", DataDir: "/d"}, get)
	if err != nil {
		t.Fatal(err)
	}
	want = Paths{CrowHome: "/x", DataDir: "/d", Checkout: "/opt/crow", Store: "/s"}
	if p != want {
		t.Fatalf("flags: got %+v, want %+v", p, want)
	}

	p, err = Resolve(Flags{}, func(k string) string { return map[string]string{"HOME": "/h"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	want = Paths{CrowHome: "/h/.crow", DataDir: "/h/.crow/data", Store: "/h/.crow/addonwall/store"}
	if p != want {
		t.Fatalf("defaults: got %+v, want %+v", p, want)
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{
		"pi":            "pi",
		"Crow-Pi.local": "crow-pi",
		"my_vps":        "my-vps",
		"-x-":           "x",
		"":              "host",
		"...":           "host",
		"ÜBER":          "ber",
		"a234567890123456789012345678901234567890123456789012345678901234567890": "a23456789012345678901234567890123456789012345678901234567890123",
	} {
		if got := DNSLabel(in); got != want {
			t.Errorf("DNSLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
