package crowhome

import (
	"fmt"
	"strings"
)

// maxSubstDepth bounds ${A:-${B:-${C}}} nesting.
const maxSubstDepth = 8

// substitute expands compose's variable forms — $$, $NAME, ${NAME},
// ${NAME:-default}, ${NAME-default}, ${NAME:?err}, ${NAME?err},
// ${NAME:+alt}, ${NAME+alt} — from env only; the controller's own
// environment is never read. Where compose would put an empty string for a
// variable that is not set (and only warn), this refuses: a port spec whose
// address silently became empty would read as "all addresses". Errors name
// variables, never their values.
func substitute(s string, env map[string]string) (string, error) {
	return substituteDepth(s, env, 0)
}

func substituteDepth(s string, env map[string]string, depth int) (string, error) {
	if depth > maxSubstDepth {
		return "", fmt.Errorf("nests ${…} deeper than %d levels", maxSubstDepth)
	}
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("ends with a lone '$' (write $$ for a dollar sign)")
		}
		switch c := s[i+1]; {
		case c == '$':
			b.WriteByte('$')
			i += 2
		case c == '{':
			end := closingBrace(s, i+2)
			if end < 0 {
				return "", fmt.Errorf("has a ${ without its closing }")
			}
			v, err := expandBraced(s[i+2:end], env, depth)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i = end + 1
		case isNameStart(c):
			j := i + 1
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			name := s[i+1 : j]
			v, ok := env[name]
			if !ok {
				return "", fmt.Errorf("uses the variable %s, which is not set and has no default", name)
			}
			b.WriteString(v)
			i = j
		default:
			return "", fmt.Errorf("has a '$' that starts no variable (write $$ for a dollar sign)")
		}
	}
	return b.String(), nil
}

// closingBrace finds the } that closes a ${ whose body starts at from,
// skipping nested ${…}.
func closingBrace(s string, from int) int {
	depth := 1
	for i := from; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '$':
			i++
		case s[i] == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func expandBraced(body string, env map[string]string, depth int) (string, error) {
	j := 0
	for j < len(body) && (j == 0 && isNameStart(body[j]) || j > 0 && isNameChar(body[j])) {
		j++
	}
	if j == 0 {
		return "", fmt.Errorf("has ${…} without a variable name")
	}
	name, rest := body[:j], body[j:]
	v, set := env[name]
	var op, arg string
	for _, o := range []string{":-", ":?", ":+", "-", "?", "+"} {
		if strings.HasPrefix(rest, o) {
			op, arg = o, rest[len(o):]
			break
		}
	}
	if op == "" && rest != "" {
		return "", fmt.Errorf("has ${%s…} with an operator compose does not know", name)
	}
	nested := func() (string, error) { return substituteDepth(arg, env, depth+1) }
	switch op {
	case "":
		if !set {
			return "", fmt.Errorf("uses the variable %s, which is not set and has no default", name)
		}
		return v, nil
	case ":-":
		if !set || v == "" {
			return nested()
		}
		return v, nil
	case "-":
		if !set {
			return nested()
		}
		return v, nil
	case ":?":
		if !set || v == "" {
			return "", fmt.Errorf("requires the variable %s, which is not set or empty", name)
		}
		return v, nil
	case "?":
		if !set {
			return "", fmt.Errorf("requires the variable %s, which is not set", name)
		}
		return v, nil
	case ":+":
		if set && v != "" {
			return nested()
		}
		return "", nil
	default: // "+"
		if set {
			return nested()
		}
		return "", nil
	}
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }
