package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/latency"
)

// handWall is an AddonWall an owner wrote by hand (no managed-by
// annotation, so the importer leaves it alone), with its mcp-addons.json
// entry beside it so a walled or unwalled decision can be prepared.
const handWall = `# written by hand
apiVersion: walls.addonwall.dev/v1alpha1
kind: AddonWall
metadata:
  name: hand
  namespace: bench
spec:
  installDir: %s
  launcher:
    command: /bin/sh
    transport: stdio
  ownerChoice: %s
`

// BenchmarkHandEditToStatus measures a hand edit of an AddonWall file in
// the store → the reconciled status word, with the controller running.
func BenchmarkHandEditToStatus(b *testing.B) {
	e2eenv.Bwrap(b)
	p := benchHome(b)
	writeJSON(b, p.AddonsFile(), map[string]any{"hand": map[string]any{"command": "/bin/sh", "args": []string{"-c", "cat"}}})
	writeJSON(b, filepath.Join(p.InstallDir("hand"), "manifest.json"), map[string]any{"id": "hand", "name": "hand"})
	file := filepath.Join(p.Store, "walls.addonwall.dev", "addonwalls", ns, "hand.yaml")
	write := func(choice string) {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(filepath.Dir(file), ".hand.tmp")
		if err := os.WriteFile(tmp, []byte(fmt.Sprintf(handWall, p.InstallDir("hand"), choice)), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			b.Fatal(err)
		}
	}
	write("walled")
	runController(b, p, map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"})
	waitAll(b, p, map[string]string{"hand": "walled"}, 60*time.Second)
	words := map[string]string{"walled": "walled", "notWalled": "not walled (your choice)"}
	var lat latency.Samples
	choice := "walled"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if choice == "walled" {
			choice = "notWalled"
		} else {
			choice = "walled"
		}
		start := time.Now()
		write(choice)
		for {
			// The status is read from the file itself, as an owner's
			// editor or `cat` would see it: opening the whole store each
			// poll would add its own cost to the figure.
			var w wallsv1.AddonWall
			data, err := os.ReadFile(file)
			if err == nil {
				err = yaml.Unmarshal(data, &w)
			}
			if err == nil && w.Status.Word == words[choice] && w.Status.ObservedGeneration == w.Generation {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("the hand edit to %s did not reach status in 10 s", choice)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	b.ReportMetric(latency.Ms(lat.P50()), "p50-ms")
	b.ReportMetric(latency.Ms(lat.P95()), "p95-ms")
}

// BenchmarkIdleRSS500 runs `addonwall run` as its own process on a Crow
// home with 500 add-ons and reports its resident memory once all are
// decided and it is idle.
func BenchmarkIdleRSS500(b *testing.B) {
	e2eenv.Bwrap(b)
	const n = 500
	p := benchHome(b)
	addons := map[string]any{}
	want := map[string]string{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("a%03d", i)
		addons[id] = map[string]any{"command": "/bin/sh", "args": []string{"-c", "cat"}}
		writeJSON(b, filepath.Join(p.InstallDir(id), "manifest.json"), map[string]any{"id": id, "name": id})
		want[id] = "walled"
	}
	writeJSON(b, p.AddonsFile(), addons)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bins.addonwall, "run", "--crow-home", p.CrowHome, "--data-dir", p.DataDir, "-n", ns,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		cmd.Env = append(os.Environ(), "CROW_ADDON_WALLS_DEFAULT=walled")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		waitAll(b, p, want, 5*time.Minute)
		b.ReportMetric(time.Since(start).Seconds(), "decide-500-s")
		time.Sleep(5 * time.Second)
		rss := vmRSS(b, cmd.Process.Pid)
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		b.ReportMetric(float64(rss)/1024, "idle-RSS-MiB")
	}
}

func vmRSS(b *testing.B, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
