package web

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// vendored maps each embedded file of the chart library to its path in
// the npm package's tarball.
var vendored = map[string]string{
	"assets/uplot/uPlot.iife.min.js": "package/dist/uPlot.iife.min.js",
	"assets/uplot/uPlot.min.css":     "package/dist/uPlot.min.css",
	"assets/uplot/LICENSE":           "package/LICENSE",
}

// The embedded chart library is the pinned one: package.json pins an
// exact version, package-lock.json holds the registry's integrity for
// it, the tarball make web fetched has that integrity, and every
// embedded file is byte for byte the tarball's. Offline: all of it is in
// the repository.
func TestEmbeddedAssetsMatchPinnedPackage(t *testing.T) {
	var pkg struct{ Dependencies map[string]string }
	readJSON(t, "assets-src/package.json", &pkg)
	version := pkg.Dependencies["uplot"]
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(version) {
		t.Fatalf("package.json pins uplot %q, want an exact version", version)
	}
	var lock struct {
		Packages map[string]struct{ Version, Integrity string }
	}
	readJSON(t, "assets-src/package-lock.json", &lock)
	locked := lock.Packages["node_modules/uplot"]
	if locked.Version != version {
		t.Fatalf("package-lock.json has uplot %s, package.json pins %s: run make web", locked.Version, version)
	}
	tgz, err := os.ReadFile("assets-src/uplot-" + version + ".tgz")
	if err != nil {
		t.Fatalf("the pinned tarball: %v (make web fetches it)", err)
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != locked.Integrity {
		t.Fatalf("tarball integrity %s, package-lock.json says %s", got, locked.Integrity)
	}
	files := untar(t, tgz)
	for emb, inTar := range vendored {
		got, err := fs.ReadFile(assets, emb)
		if err != nil {
			t.Errorf("embedded %s: %v", emb, err)
			continue
		}
		want, ok := files[inTar]
		if !ok {
			t.Errorf("the tarball has no %s", inTar)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s differs from the pinned package's %s: run make web", emb, inTar)
		}
	}
	// And nothing else under uplot/: what is embedded is what is checked.
	ents, _ := fs.ReadDir(assets, "assets/uplot")
	if len(ents) != len(vendored) {
		t.Errorf("assets/uplot holds %d files, want the %d checked here", len(ents), len(vendored))
	}
}

// The page loads nothing from elsewhere: it must work offline.
func TestPageLoadsOnlyEmbeddedAssets(t *testing.T) {
	page, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) < 4 {
		t.Fatalf("found %d references in index.html, want the scripts and styles", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		if !strings.HasPrefix(ref, "assets/") {
			if ref == "download.json" || ref == "download.csv" {
				continue
			}
			t.Errorf("index.html refers to %q: only embedded assets and the downloads", ref)
			continue
		}
		if _, err := fs.Stat(assets, ref); err != nil {
			t.Errorf("index.html refers to %q, which is not embedded", ref)
		}
	}
	for _, f := range []string{"assets/index.html", "assets/app.js", "assets/app.css"} {
		b, _ := fs.ReadFile(assets, f)
		if regexp.MustCompile(`https?://`).Match(b) {
			t.Errorf("%s names an absolute URL: the page must work offline", f)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func untar(t *testing.T, tgz []byte) map[string][]byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}
