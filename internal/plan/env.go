package plan

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Limits on the child's environment; past them the plan is refused rather
// than truncated.
const (
	maxEnvVars      = 512
	maxEnvNameLen   = 128
	maxEnvValueLen  = 32 << 10
	maxEnvTotalSize = 256 << 10
)

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretRe is the bot-env rule: a controller variable whose name looks like a
// secret never reaches a child unless the add-on's own entry sets it.
var secretRe = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASS(WORD|WD)?|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNING|DSN)`)

// LooksSecret reports whether a variable name looks like it holds a secret.
func LooksSecret(name string) bool { return secretRe.MatchString(name) }

// controllerAllow is the slice of the controller's environment a child may
// see: Crow's bot-env allowlist less what the wall sets itself (HOME, TMPDIR,
// XDG_*, the proxy variables) and less the bot-only keys.
var controllerAllow = map[string]bool{
	"PATH": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "COLORTERM": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true, "NODE_ENV": true,
	"CROW_HOME": true, "CROW_DATA_DIR": true, "CROW_DB_PATH": true, "CROW_TASKS_DB_PATH": true,
	"CROW_APP_ROOT": true, "CROW_GATEWAY_PORT": true, "CROW_GATEWAY_URL": true,
}

// injectionExact and injectionPrefix name variables that make a loader,
// interpreter or shell run something other than what was asked. They never
// come from the controller or the registry, and from the add-on's own entry
// only when the owner typed them.
var injectionExact = map[string]bool{
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true,
	"PROMPT_COMMAND": true, "IFS": true, "CDPATH": true, "GLOBIGNORE": true,
	"NODE_OPTIONS": true, "NODE_PATH": true, "NODE_REPL_EXTERNAL_MODULE": true,
	"NODE_TLS_REJECT_UNAUTHORIZED": true,
	"PYTHONPATH":                   true, "PYTHONSTARTUP": true, "PYTHONHOME": true, "PYTHONINSPECT": true,
	"PYTHONUSERBASE": true, "PYTHONBREAKPOINT": true,
	"PERL5OPT": true, "PERL5LIB": true, "PERLLIB": true, "RUBYOPT": true, "RUBYLIB": true,
	"GCONV_PATH": true, "GLIBC_TUNABLES": true, "LOCPATH": true, "NLSPATH": true,
	"HOSTALIASES": true, "RES_OPTIONS": true, "MALLOC_CHECK_": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_ASKPASS": true, "SSH_ASKPASS": true,
	"GIT_EXEC_PATH": true, "GIT_TEMPLATE_DIR": true, "EDITOR": true, "VISUAL": true, "PAGER": true,
}

var injectionPrefix = []string{"LD_", "DYLD_", "GIT_CONFIG", "BASH_FUNC_"}

// IsInjectionName reports whether a variable can make a loader, interpreter
// or shell run code of someone else's choosing.
func IsInjectionName(name string) bool {
	if injectionExact[name] {
		return true
	}
	for _, p := range injectionPrefix {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// switchNames are the host switches: read from the controller only, never
// passed to or taken from a child.
var switchNames = map[string]bool{"CROW_ADDON_WALLS": true, "CROW_ADDON_WALLS_DEFAULT": true}

// wallOwned reports whether the wall alone decides a variable. Compared
// without case, because npm and curl read these in either case.
func wallOwned(name string) bool {
	u := strings.ToUpper(name)
	switch u {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
		"NODE_USE_ENV_PROXY", "TMPDIR", "HOME", "NPM_CONFIG_CACHE", "UV_CACHE_DIR", "CROW_ADDON_DOOR_TOKEN_FILE":
		return true
	}
	return strings.HasPrefix(u, "XDG_") || switchNames[u]
}

// wallEnv is the part of the environment the wall sets, given the add-on's
// data folder.
func wallEnv(data string, proxyPort int, doors bool) map[string]string {
	proxy := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
	noProxy := "localhost,127.0.0.1,::1"
	cache := data + "/.cache"
	env := map[string]string{
		"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy,
		"http_proxy": proxy, "https_proxy": proxy, "all_proxy": proxy,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
		// Node's own fetch and http honour the proxy variables only when
		// told to (Node 22.21 and 24 on; older Node ignores it).
		"NODE_USE_ENV_PROXY": "1",
		"TMPDIR":             "/tmp",
		"HOME":               data,
		"XDG_CACHE_HOME":     cache,
		"XDG_CONFIG_HOME":    data + "/.config",
		"XDG_DATA_HOME":      data + "/.local/share",
		"XDG_STATE_HOME":     data + "/.local/state",
		"npm_config_cache":   cache + "/npm",
		"UV_CACHE_DIR":       cache + "/uv",
	}
	if doors {
		env["CROW_ADDON_DOOR_TOKEN_FILE"] = DoorTokenPath
	}
	return env
}

// checkEnvVar refuses a name or value that cannot travel safely: bad name,
// NUL (the --args separator), or too long.
func checkEnvVar(origin, name, value string) error {
	if len(name) > maxEnvNameLen || !envNameRe.MatchString(name) {
		return fmt.Errorf("%s: variable name %q is not a valid name (letters, digits, underscore; at most %d)", origin, name, maxEnvNameLen)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("%s: variable %s holds a NUL byte", origin, name)
	}
	if len(value) > maxEnvValueLen {
		return fmt.Errorf("%s: variable %s is %d bytes, over the %d-byte limit", origin, name, len(value), maxEnvValueLen)
	}
	return nil
}

// BuildEnv builds the child's whole environment: the allowlisted slice of the
// controller's environment, the registry-declared keys, the add-on's own
// values, and last the wall's own variables, which nothing overrides. It
// returns the names of own variables it dropped. The result is never nil.
func BuildEnv(in EnvInput, data string, proxyPort int, doors bool) (map[string]string, []string, error) {
	env := make(map[string]string)
	for name, value := range in.Controller {
		if !(controllerAllow[name] || strings.HasPrefix(name, "LC_")) {
			continue
		}
		if LooksSecret(name) || IsInjectionName(name) || wallOwned(name) {
			continue
		}
		if err := checkEnvVar("controller environment", name, value); err != nil {
			return nil, nil, err
		}
		env[name] = value
	}
	for _, name := range in.Declared {
		if err := checkEnvVar("registry-declared keys", name, ""); err != nil {
			return nil, nil, err
		}
		value, ok := in.Controller[name]
		if !ok || LooksSecret(name) || IsInjectionName(name) || wallOwned(name) {
			continue
		}
		if err := checkEnvVar("controller environment", name, value); err != nil {
			return nil, nil, err
		}
		env[name] = value
	}
	var dropped []string
	seen := map[string]bool{}
	for _, v := range in.Own {
		if err := checkEnvVar("the add-on's own env", v.Name, v.Value); err != nil {
			return nil, nil, err
		}
		if seen[v.Name] {
			return nil, nil, fmt.Errorf("the add-on's own env: variable %s is set twice", v.Name)
		}
		seen[v.Name] = true
		if wallOwned(v.Name) {
			dropped = append(dropped, v.Name)
			continue
		}
		if IsInjectionName(v.Name) && !v.OwnerTyped {
			return nil, nil, fmt.Errorf("the add-on's own env: %s is only a manifest default and can change what the add-on's interpreter runs; the owner must type it", v.Name)
		}
		env[v.Name] = v.Value
	}
	for name, value := range wallEnv(data, proxyPort, doors) {
		env[name] = value
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	if len(env) > maxEnvVars {
		return nil, nil, fmt.Errorf("the child environment has %d variables, over the limit of %d", len(env), maxEnvVars)
	}
	total := 0
	for k, v := range env {
		total += len(k) + len(v) + 2
	}
	if total > maxEnvTotalSize {
		return nil, nil, fmt.Errorf("the child environment is %d bytes, over the limit of %d", total, maxEnvTotalSize)
	}
	sort.Strings(dropped)
	return env, dropped, nil
}
