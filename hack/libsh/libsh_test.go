/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package libsh tests the shell functions of hack/lib.sh that choose
// versions and toolchains, against a stand-in go command.
package libsh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo writes a go command that answers `go list -m -versions` with
// versions (or fails when versions is ""), `go env GOVERSION` with
// goVersion and `go env GOTOOLCHAIN` with "local", and returns a PATH that
// finds it first.
func fakeGo(t *testing.T, versions, goVersion string) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/usr/bin/env bash
case "$*" in
"list -m -versions k8s.io/client-go")
	[ -n "$FAKE_VERSIONS" ] || { echo "go: module lookup disabled by GOPROXY=off" >&2; exit 1; }
	echo "k8s.io/client-go $FAKE_VERSIONS" ;;
"env GOVERSION") echo "$FAKE_GOVERSION" ;;
"env GOTOOLCHAIN") echo local ;;
*) echo "unexpected: go $*" >&2; exit 3 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_VERSIONS", versions)
	t.Setenv("FAKE_GOVERSION", goVersion)
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// libsh runs script after sourcing a copy of hack/lib.sh in a repository
// whose root go.mod is gomod; it returns stdout and stderr.
func libsh(t *testing.T, path, gomod, script string) (string, string) {
	t.Helper()
	repo := t.TempDir()
	lib, err := os.ReadFile("../lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "hack", "lib.sh"), lib, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", `set -euo pipefail; unset GOTOOLCHAIN; source hack/lib.sh; `+script)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "PATH="+path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), stderr.String()
}

const gomod126 = "module x\n\ngo 1.26.0\n"

// TestNextVersion: the next lane follows the newest v0.X.Y the proxy
// lists (a pre-release until the release is out), ignores client-go's old
// tags, and falls back to the pinned version, saying why, when the proxy
// cannot be asked.
func TestNextVersion(t *testing.T) {
	for _, tc := range []struct{ versions, want string }{
		{"v0.37.1 v0.37.2 v0.38.0-alpha.0 v0.38.0-alpha.2 v0.38.0-beta.0 v1.4.0 v11.0.0", "v0.38.0-beta.0"},
		{"v0.37.2 v0.38.0-beta.0 v0.38.0-rc.0", "v0.38.0-rc.0"},
		{"v0.37.2 v0.38.0-rc.1 v0.38.0", "v0.38.0"},
		{"v0.38.0 v0.38.1 v0.39.0-alpha.0", "v0.39.0-alpha.0"},
	} {
		got, _ := libsh(t, fakeGo(t, tc.versions, "go1.26.8"), gomod126, "k8s_next_version")
		if got != tc.want {
			t.Errorf("versions %q: next %q, want %q", tc.versions, got, tc.want)
		}
	}
	pinned, _ := libsh(t, fakeGo(t, "", "go1.26.8"), gomod126, "echo $next_version_pinned")
	got, stderr := libsh(t, fakeGo(t, "", "go1.26.8"), gomod126, "k8s_next_version")
	if got != pinned || !strings.Contains(stderr, "GOPROXY=off") || !strings.Contains(stderr, "using the pinned "+pinned) {
		t.Errorf("without the proxy: %q (stderr %q), want the pinned %s and why", got, stderr, pinned)
	}
}

// TestUseRepoToolchain: under GOTOOLCHAIN=local, a go older than the root
// go.mod asks for makes the scripts export the toolchain go.mod names; a
// new enough go changes nothing.
func TestUseRepoToolchain(t *testing.T) {
	for _, tc := range []struct{ gomod, goVersion, want string }{
		{"module x\n\ngo 1.27.0\n\ntoolchain go1.27.3\n", "go1.26.8", "go1.27.3"},
		{"module x\n\ngo 1.27.0\n", "go1.26.8", "go1.27.0"},
		{"module x\n\ngo 1.27.0\n\ntoolchain go1.27.3\n", "go1.27.3", "unset"},
		{gomod126, "go1.26.8", "unset"},
	} {
		got, _ := libsh(t, fakeGo(t, "", tc.goVersion), tc.gomod, `echo "${GOTOOLCHAIN:-unset}"`)
		if got != tc.want {
			t.Errorf("go.mod %q with %s: GOTOOLCHAIN %q, want %q", tc.gomod, tc.goVersion, got, tc.want)
		}
	}
}

// TestOtherVersion: the other lane runs the upcoming minor while main is
// behind it, and the newest release of the previous minor once main has
// moved (pre-releases and older patch releases of that minor are not
// candidates); it fails, saying why, when no such release is listed.
func TestOtherVersion(t *testing.T) {
	on := func(v string) string {
		return "module x\n\ngo 1.26.0\n\nrequire k8s.io/client-go " + v + "\n"
	}
	for _, tc := range []struct{ main, versions, want string }{
		{"v0.37.2", "v0.37.1 v0.37.2 v0.38.0-beta.0", "v0.38.0-beta.0"},
		{"v0.37.2", "v0.37.2 v0.38.0-rc.1 v0.38.0", "v0.38.0"},
		{"v0.38.0", "v0.37.1 v0.37.2 v0.38.0-rc.1 v0.38.0", "v0.37.2"},
		{"v0.38.1", "v0.36.9 v0.37.0 v0.37.2 v0.37.3-rc.0 v0.38.0 v0.38.1", "v0.37.2"},
		{"v0.38.0", "v0.37.2 v0.38.0 v0.39.0-alpha.0", "v0.39.0-alpha.0"},
	} {
		got, _ := libsh(t, fakeGo(t, tc.versions, "go1.26.8"), on(tc.main), "k8s_other_version")
		if got != tc.want {
			t.Errorf("main on %s, proxy lists %q: other lane %q, want %q", tc.main, tc.versions, got, tc.want)
		}
	}
	got, stderr := libsh(t, fakeGo(t, "v0.38.0", "go1.26.8"), on("v0.38.0"), "k8s_other_version || echo failed")
	if got != "failed" || !strings.Contains(stderr, "no release of the minor before it") {
		t.Errorf("no v0.37 release listed: %q (stderr %q), want a failure that says why", got, stderr)
	}
}

// TestDowngradeGomods: a move to an older minor lowers newer go lines to
// client-go's, drops the toolchain line and every indirect requirement (tidy
// resolves them again), and keeps direct requirements and older go lines.
func TestDowngradeGomods(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{
			"module x\n\ngo 1.27.0\n\ntoolchain go1.27.3\n\nrequire (\n\tk8s.io/client-go v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n)\n\nrequire (\n\tk8s.io/kube-openapi v0.0.0-20261014044854-ca3452a79603 // indirect\n\tsigs.k8s.io/structured-merge-diff/v7 v7.0.0 // indirect\n)\n\nrequire sigs.k8s.io/yaml v1.6.0 // indirect\n",
			"module x\n\ngo 1.26.0\n\n\nrequire (\n\tk8s.io/client-go v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n)\n\nrequire (\n)\n",
		},
		{"module x\n\ngo 1.25.0\n", "module x\n\ngo 1.25.0\n"},
	} {
		got, _ := libsh(t, fakeGo(t, "", "go1.26.8"), tc.gomod, "downgrade_gomods 1.26.0 >&2; cat go.mod")
		if got != strings.TrimSpace(tc.want) {
			t.Errorf("go.mod %q: downgraded to %q, want %q", tc.gomod, got, tc.want)
		}
	}
}

// TestPickToolchain: a go line gets the go on PATH when that has its minor
// and is new enough, else the listed toolchain of its minor, else itself.
func TestPickToolchain(t *testing.T) {
	for _, tc := range []struct{ need, local, want string }{
		{"1.26.0", "go1.26.8", "go1.26.8"},
		{"1.27.0", "go1.26.8", "go1.27.3"},
		{"1.26.9", "go1.26.8", "go1.26.9"},
		{"1.28.0", "go1.26.8", "go1.28.0"},
	} {
		got, _ := libsh(t, fakeGo(t, "", tc.local), gomod126, "pick_toolchain "+tc.need)
		if got != tc.want {
			t.Errorf("go %s with %s on PATH: %q, want %q", tc.need, tc.local, got, tc.want)
		}
	}
}

// TestBumpGomods: every go.mod's k8s.io staging modules of the root
// client-go's minor move to the new version, whatever their patch (crsuite's
// indirect apiextensions-apiserver v0.37.0, which controller-runtime v0.25.3
// requires), in require and replace lines; other k8s.io modules (klog,
// kube-openapi, utils), other minors and other modules stay.
func TestBumpGomods(t *testing.T) {
	root := "module x\n\ngo 1.26.0\n\nrequire (\n\tk8s.io/api v0.37.2\n\tk8s.io/client-go v0.37.2\n\tk8s.io/klog/v2 v2.140.0\n)\n"
	sub := "module y\n\ngo 1.26.0\n\nreplace k8s.io/api => k8s.io/api v0.37.1\n\nrequire (\n\tk8s.io/client-go v0.37.2\n\tsigs.k8s.io/controller-runtime v0.25.3\n)\n\nrequire (\n\tk8s.io/apiextensions-apiserver v0.37.0 // indirect\n\tk8s.io/component-base v0.36.4 // indirect\n\tk8s.io/kube-openapi v0.0.0-20260721132016-d427ff9ee9ad // indirect\n\tk8s.io/utils v0.0.0-20260626114624-be93311217bd // indirect\n)\n"
	got, _ := libsh(t, fakeGo(t, "", "go1.26.8"), root,
		"mkdir -p crcache/crsuite && printf %s '"+sub+"' >crcache/crsuite/go.mod && bump_gomods v0.38.0-beta.0 >&2; cat go.mod crcache/crsuite/go.mod")
	want := strings.ReplaceAll(root, "v0.37.2", "v0.38.0-beta.0") +
		strings.NewReplacer("v0.37.2", "v0.38.0-beta.0", "v0.37.1", "v0.38.0-beta.0", "v0.37.0", "v0.38.0-beta.0").Replace(sub)
	if got != strings.TrimSpace(want) {
		t.Errorf("bumped to\n%s\nwant\n%s", got, want)
	}
}
