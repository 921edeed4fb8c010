package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Running lists the instances that run now, by name, sorted: a state
// file whose process is alive beside a control socket.
func Running() ([]string, error) { return runningIn(RunDir) }

func runningIn(dir string) ([]string, error) {
	all, err := stateNames(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range all {
		if _, err := os.Stat(filepath.Join(dir, name+".sock")); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			continue
		}
		var st State
		if json.Unmarshal(b, &st) != nil || !st.Alive() {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Pick chooses the instance a client command (stats, set) talks to.
// With a name given (given true) it is that one. Without, it is the only
// running instance, or the default one among several. When the chosen one
// does not run, or several run and none is the default, the error lists
// those that run, so the user can give --name.
func Pick(name string, given bool) (string, error) {
	running, err := Running()
	if err != nil {
		return "", err
	}
	return pick(name, given, running)
}

func pick(name string, given bool, running []string) (string, error) {
	switch {
	case given && slices.Contains(running, name):
		return name, nil
	case given:
		return "", notRunning(name, running)
	case len(running) == 1:
		return running[0], nil
	case slices.Contains(running, name):
		return name, nil
	case len(running) > 1:
		return "", fmt.Errorf("%d instances run: %s; give --name", len(running), strings.Join(running, ", "))
	}
	return "", notRunning(name, running)
}

// notRunning says that instance name does not run, and which ones do.
func notRunning(name string, running []string) error {
	if len(running) == 0 {
		return fmt.Errorf("no running instance %q, and none other: start one with 'pi2hop run', 'pi2hop shell' or 'pi2hop share'", name)
	}
	return fmt.Errorf("no running instance %q; running: %s (give --name)", name, strings.Join(running, ", "))
}

// stateNames lists the instance names that have a state file in dir.
func stateNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && CheckName(name) == nil {
			names = append(names, name)
		}
	}
	return names, nil
}
