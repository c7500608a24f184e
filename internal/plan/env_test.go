package plan

import (
	"strings"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	controller := map[string]string{
		"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
		"CROW_TEST_CANARY": "canary-1", "AWS_SECRET_ACCESS_KEY": "canary-2", "ANTHROPIC_API_KEY": "canary-3",
		"CREDENTIALS_DIRECTORY": "/run/credentials/crow", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
		"SSH_AUTH_SOCK": "/tmp/ssh-x/agent", "LD_PRELOAD": "/x/evil.so", "NODE_OPTIONS": "--require /x.js",
		"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000", "TMPDIR": "/var/tmp",
		"HTTPS_PROXY": "http://corp:3128", "CROW_ADDON_WALLS": "off",
		"FUNKWHALE_URL": "http://crow-funkwhale", "FUNKWHALE_TOKEN": "canary-4",
	}
	type want struct {
		has    map[string]string
		absent []string
	}
	cases := []struct {
		name    string
		in      EnvInput
		doors   bool
		want    want
		wantErr string
		dropped []string
	}{
		{
			name: "allowlisted slice of the controller only",
			in:   EnvInput{Controller: controller},
			want: want{
				has: map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC"},
				absent: []string{"CROW_TEST_CANARY", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "CREDENTIALS_DIRECTORY",
					"DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "LD_PRELOAD", "NODE_OPTIONS", "XDG_RUNTIME_DIR",
					"CROW_ADDON_WALLS", "FUNKWHALE_URL"},
			},
		},
		{
			name: "controller HOME, TMPDIR and proxies never pass; the wall's do",
			in:   EnvInput{Controller: controller},
			want: want{has: map[string]string{"HOME": "/data/demo", "TMPDIR": "/tmp", "HTTPS_PROXY": "http://127.0.0.1:39080"}},
		},
		{
			name: "registry-declared keys come from the controller, but never a secret-looking one",
			in:   EnvInput{Controller: controller, Declared: []string{"FUNKWHALE_URL", "FUNKWHALE_TOKEN", "LD_PRELOAD"}},
			want: want{has: map[string]string{"FUNKWHALE_URL": "http://crow-funkwhale"}, absent: []string{"FUNKWHALE_TOKEN", "LD_PRELOAD"}},
		},
		{
			name: "the add-on's own entry may set a secret-looking name",
			in:   EnvInput{Controller: controller, Own: []EnvVar{{Name: "FUNKWHALE_TOKEN", Value: "own-token", OwnerTyped: true}}},
			want: want{has: map[string]string{"FUNKWHALE_TOKEN": "own-token"}},
		},
		{
			name:    "the entry cannot override wall variables, in any case",
			in:      EnvInput{Own: []EnvVar{{Name: "HTTPS_PROXY", Value: "http://evil"}, {Name: "no_proxy", Value: "*"}, {Name: "NPM_CONFIG_CACHE", Value: "/x"}, {Name: "XDG_CACHE_HOME", Value: "/x"}, {Name: "CROW_ADDON_WALLS", Value: "off"}, {Name: "CROW_ADDON_DOOR_TOKEN_FILE", Value: "/x"}, {Name: "NODE_USE_ENV_PROXY", Value: "0"}}},
			want:    want{has: map[string]string{"HTTPS_PROXY": "http://127.0.0.1:39080", "no_proxy": "localhost,127.0.0.1,::1", "XDG_CACHE_HOME": "/data/demo/.cache", "NODE_USE_ENV_PROXY": "1"}, absent: []string{"NPM_CONFIG_CACHE", "CROW_ADDON_WALLS", "CROW_ADDON_DOOR_TOKEN_FILE"}},
			dropped: []string{"CROW_ADDON_DOOR_TOKEN_FILE", "CROW_ADDON_WALLS", "HTTPS_PROXY", "NODE_USE_ENV_PROXY", "NPM_CONFIG_CACHE", "XDG_CACHE_HOME", "no_proxy"},
		},
		{
			name:    "an injection variable from a manifest default is refused",
			in:      EnvInput{Own: []EnvVar{{Name: "NODE_OPTIONS", Value: "--require /data/x.js"}}},
			wantErr: "NODE_OPTIONS is only a manifest default",
		},
		{
			name: "an injection variable the owner typed is the owner's choice",
			in:   EnvInput{Own: []EnvVar{{Name: "NODE_OPTIONS", Value: "--max-old-space-size=512", OwnerTyped: true}}},
			want: want{has: map[string]string{"NODE_OPTIONS": "--max-old-space-size=512"}},
		},
		{name: "a NUL in a value is refused", in: EnvInput{Own: []EnvVar{{Name: "A", Value: "x\x00--bind"}}}, wantErr: "NUL"},
		{name: "a name with = is refused", in: EnvInput{Own: []EnvVar{{Name: "A=B", Value: "x"}}}, wantErr: "not a valid name"},
		{name: "an empty name is refused", in: EnvInput{Own: []EnvVar{{Name: "", Value: "x"}}}, wantErr: "not a valid name"},
		{name: "a huge value is refused", in: EnvInput{Own: []EnvVar{{Name: "A", Value: strings.Repeat("x", maxEnvValueLen+1)}}}, wantErr: "over the"},
		{name: "a name set twice is refused", in: EnvInput{Own: []EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}}, wantErr: "set twice"},
		{
			name:  "doors add the token file variable",
			in:    EnvInput{},
			doors: true,
			want:  want{has: map[string]string{"CROW_ADDON_DOOR_TOKEN_FILE": DoorTokenPath}},
		},
		{
			name: "no controller env at all is an empty slice plus the wall's own, never nil",
			in:   EnvInput{},
			want: want{has: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/data/demo"}, absent: []string{"LANG"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dropped, err := BuildEnv(c.in, "/data/demo", DefaultProxyPort, c.doors)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if env == nil {
				t.Fatal("env is nil")
			}
			for k, v := range c.want.has {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range c.want.absent {
				if _, ok := env[k]; ok {
					t.Errorf("%s is present", k)
				}
			}
			for _, v := range env {
				if strings.HasPrefix(v, "canary-") && v != "own-token" {
					t.Errorf("a canary value reached the child: %s", v)
				}
			}
			if c.dropped != nil && strings.Join(dropped, ",") != strings.Join(c.dropped, ",") {
				t.Errorf("dropped = %v, want %v", dropped, c.dropped)
			}
		})
	}
}

func TestLooksSecret(t *testing.T) {
	for name, want := range map[string]bool{
		"API_KEY": true, "github_token": true, "DB_PASSWORD": true, "PASSWD": true, "OAUTH_CLIENT": true,
		"SESSION_ID": true, "SENTRY_DSN": true, "PRIVATE_X": true, "SIGNING_X": true, "COOKIE_JAR": true,
		"PATH": false, "LANG": false, "NODE_ENV": false, "TZ": false, "FUNKWHALE_URL": false,
	} {
		if LooksSecret(name) != want {
			t.Errorf("LooksSecret(%q) = %v, want %v", name, !want, want)
		}
	}
}
