package decide

import (
	"strings"
	"testing"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestReach(t *testing.T) {
	tests := []struct {
		name   string
		r      ReachFacts
		en, es string
	}{
		{"nothing", ReachFacts{},
			"network: none; files: its own data folder; doors: none",
			"red: ninguna; archivos: su propia carpeta de datos; puertas: ninguna"},
		{"internet", ReachFacts{Internet: true},
			"network: internet (HTTPS, port 443); files: its own data folder; doors: none",
			"red: internet (HTTPS, puerto 443); archivos: su propia carpeta de datos; puertas: ninguna"},
		{"listed hosts only", ReachFacts{Hosts: []string{"FUNKWHALE_URL"}},
			"network: listed hosts from FUNKWHALE_URL; files: its own data folder; doors: none",
			"red: direcciones indicadas en FUNKWHALE_URL; archivos: su propia carpeta de datos; puertas: ninguna"},
		{"everything", ReachFacts{Internet: true, Hosts: []string{"A_URL", "B_URL"}, Read: []string{"NOTES"}, Write: []string{"OUT", "DL"},
			OAuthDir: "TOKEN_FILE", OwnEnvFile: true, StateDirs: []string{"browser"}, Doors: "kiosk"},
			"network: internet (HTTPS, port 443) and listed hosts from A_URL, B_URL; files: its own data folder, reads NOTES, writes OUT, DL, sign-in folder from TOKEN_FILE, its own .env, state folders browser; doors: kiosk",
			"red: internet (HTTPS, puerto 443) y direcciones indicadas en A_URL, B_URL; archivos: su propia carpeta de datos, lee NOTES, escribe OUT, DL, carpeta de acceso de TOKEN_FILE, su propio .env, carpetas de estado browser; puertas: kiosk"},
		{"crow.db reader", ReachFacts{CrowDb: true},
			"network: none; files: its own data folder; doors: none; it can also read Crow's stored keys and change its database",
			"red: ninguna; archivos: su propia carpeta de datos; puertas: ninguna; además puede leer las claves guardadas de Crow y cambiar su base de datos"},
		{"crow.db and storage", ReachFacts{CrowDb: true, Storage: true},
			"network: none; files: its own data folder; doors: none; it can also read Crow's stored keys and change its database and use all of Crow's storage",
			"red: ninguna; archivos: su propia carpeta de datos; puertas: ninguna; además puede leer las claves guardadas de Crow y cambiar su base de datos y usar todo el almacenamiento de Crow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reach(tt.r, LangEN); got != tt.en {
				t.Errorf("en:\n got %q\nwant %q", got, tt.en)
			}
			if got := Reach(tt.r, LangES); got != tt.es {
				t.Errorf("es:\n got %q\nwant %q", got, tt.es)
			}
		})
	}
}

func TestReachNamesAreInert(t *testing.T) {
	r := ReachFacts{Hosts: []string{"X\n<script>alert(1)</script>"}, Doors: "\x1b[2J", StateDirs: []string{"a\u202eb"}}
	got := Reach(r, LangEN)
	for _, bad := range []string{"\n", "<", "\x1b", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Errorf("reach line %q carries %q", got, bad)
		}
	}
	// Positive control: the same names are there, escaped.
	for _, want := range []string{`X\n&lt;script&gt;`, `\x1b[2J`, `a\u202eb`} {
		if !strings.Contains(got, want) {
			t.Errorf("reach line %q lacks %q", got, want)
		}
	}
}

func TestReachOf(t *testing.T) {
	p := v1alpha1.Profile{
		Network:    v1alpha1.NetworkProfile{Internet: true, Hosts: []v1alpha1.EnvField{{Name: "H", OwnerTyped: true}}},
		Files:      v1alpha1.FilesProfile{Read: []v1alpha1.EnvField{{Name: "R"}}, Write: []v1alpha1.EnvField{{Name: "W"}}, OAuthDir: &v1alpha1.EnvField{Name: "T"}},
		OwnEnvFile: true, Doors: "kiosk", CrowDb: true, Storage: true, StateDirs: []string{"s"},
	}
	got := ReachOf(p)
	if !got.Internet || got.Hosts[0] != "H" || got.Read[0] != "R" || got.Write[0] != "W" || got.OAuthDir != "T" ||
		!got.OwnEnvFile || got.Doors != "kiosk" || !got.CrowDb || !got.Storage || got.StateDirs[0] != "s" {
		t.Fatalf("ReachOf = %+v", got)
	}
	if z := ReachOf(v1alpha1.Profile{}); z.OAuthDir != "" || z.Internet || len(z.Hosts) != 0 {
		t.Fatalf("ReachOf(empty) = %+v", z)
	}
}
