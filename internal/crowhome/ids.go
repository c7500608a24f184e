package crowhome

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	idPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// ValidID reports why id cannot name an add-on, or nil. An id becomes a
// folder name under <CROW_HOME>/bundles and the data dir, so besides the
// pattern ^[a-z0-9][a-z0-9._-]{0,63}$ it must not spell one of the names the
// linked-add-on migration gives its own folders beside <id>
// (<id>.migrating, <id>.linked-<stamp>, <id>.migrated-<stamp>): an add-on
// named like that would own another add-on's migration folder.
func ValidID(id string) error {
	if id == "." || id == ".." {
		return errors.New("is not an add-on id: . and .. name folders, not add-ons")
	}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("is not an add-on id: an id is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	}
	if strings.HasSuffix(id, ".migrating") || strings.Contains(id, ".linked-") || strings.Contains(id, ".migrated-") {
		return errors.New("is not an add-on id: it spells a migration folder name (.migrating, .linked-, .migrated-)")
	}
	return nil
}

// ValidEnvName reports why name cannot be an environment variable name, or nil.
func ValidEnvName(name string) error {
	if !envNamePattern.MatchString(name) {
		return errors.New("is not an environment variable name: it must match ^[A-Za-z_][A-Za-z0-9_]{0,127}$")
	}
	return nil
}
