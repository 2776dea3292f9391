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

package clientgo_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyClientgoImportsClientGoInformers: k8s.io/client-go/informers (and
// with it client-go's informers for every kind) is linked only into
// programs that import this package, never through the root package or
// any other package of the module.
func TestOnlyClientgoImportsClientGoInformers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = ".." // the module root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr(err))
	}
	const forbidden = "k8s.io/client-go/informers"
	const self = "github.com/kubeinformers/informers/clientgo"
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, deps := fields[0], fields[1:]
		imports := false
		for _, d := range deps {
			if d == forbidden || strings.HasPrefix(d, forbidden+"/") {
				imports = true
				break
			}
		}
		switch {
		case pkg == self && !imports:
			t.Errorf("%s does not depend on %s: go list is not reporting dependencies", pkg, forbidden)
		case pkg != self && imports:
			t.Errorf("%s depends on %s; only %s may", pkg, forbidden, self)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("go list reported %d packages:\n%s", checked, out)
	}
}

func stderr(err error) []byte {
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}
