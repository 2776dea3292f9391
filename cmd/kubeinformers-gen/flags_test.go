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

package main

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// informerGenV0372Flags are the flags informer-gen v0.37.2's -h lists
// (hack/codegen's TestFlagsMatchInformerGen compares with the real one).
var informerGenV0372Flags = []string{
	"add_dir_header", "alsologtostderr", "alsologtostderrthreshold", "go-header-file", "internal-clientset-package",
	"legacy_stderr_threshold_behavior", "lint-rules", "listers-package", "log_backtrace_at", "log_dir", "log_file",
	"log_file_max_size", "logtostderr", "one_output", "output-dir", "output-pkg", "plural-exceptions",
	"single-directory", "skip_headers", "skip_log_headers", "stderrthreshold", "v", "versioned-clientset-package", "vmodule",
}

// sampleControllerFlags are the flags kube_codegen.sh's gen_client passes
// informer-gen for kubernetes/sample-controller's update-codegen.sh, beyond
// those extArgs has, and klog flags a user may add.
var sampleControllerFlags = []string{
	"--lint-rules", "known-tags-only,require-explicit-disablement",
	"--internal-clientset-package", "example.com/apis/ext/client/internalclientset",
	"--logtostderr", "--alsologtostderr=false", "--stderrthreshold", "ERROR", "--log_file_max_size", "10",
	"--vmodule", "gen=4", "--add_dir_header",
}

// TestInformerGenAcceptsEveryFlag: informer-gen's flags that mean nothing
// here are accepted and change nothing in the output; at -v 1 each one given
// is named with why, and at -v 0 nothing is said.
func TestInformerGenAcceptsEveryFlag(t *testing.T) {
	t.Chdir(filepath.Join(mustAbs(fixtures), "ext"))
	plain := t.TempDir()
	if err := run(extArgs(plain, nil)); err != nil {
		t.Fatal(err)
	}
	var notes bytes.Buffer
	saved := noteOutput
	noteOutput = &notes
	defer func() { noteOutput = saved }()
	for _, verbosity := range []string{"0", "2"} {
		notes.Reset()
		out := t.TempDir()
		args := extArgs(out, append(sampleControllerFlags, "-v", verbosity))
		if err := run(args); err != nil {
			t.Fatalf("-v %s: %v", verbosity, err)
		}
		if got, want := readTree(t, out), readTree(t, plain); !reflect.DeepEqual(got, want) {
			t.Errorf("-v %s: the accepted flags changed the output", verbosity)
		}
		if verbosity == "0" {
			if notes.Len() != 0 {
				t.Errorf("-v 0 said %q", notes.String())
			}
			continue
		}
		for _, want := range []string{
			"--lint-rules known-tags-only,require-explicit-disablement: accepted, no effect: ",
			"--internal-clientset-package example.com/apis/ext/client/internalclientset: accepted, no effect: ",
			"--logtostderr true: accepted, no effect: a klog flag",
			"--vmodule gen=4: accepted",
		} {
			if !strings.Contains(notes.String(), want) {
				t.Errorf("-v 2 does not say %q:\n%s", want, notes.String())
			}
		}
	}
}

// TestInformerGenHelp: -h lists every flag of informer-gen v0.37.2, in
// informer-gen's mode and in the library's, and is not an error.
func TestInformerGenHelp(t *testing.T) {
	var help bytes.Buffer
	saved := usageOutput
	usageOutput = &help
	defer func() { usageOutput = saved }()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"--output-dir", "x", "-h"}, {"-v", "0", "--lint-rules", "known-tags-only", "--help"}} {
		help.Reset()
		if err := run(args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		for _, name := range informerGenV0372Flags {
			if !strings.Contains(help.String(), "--"+name+" ") {
				t.Errorf("%q does not list --%s:\n%s", args, name, help.String())
			}
		}
		if lib := strings.Contains(help.String(), "-module-dir"); lib != !informerGenMode(args) {
			t.Errorf("%q: library flags listed = %v", args, lib)
		}
	}
	if len(informerGenFlagSet) != len(informerGenV0372Flags) {
		t.Errorf("%d flags in the table, informer-gen v0.37.2 has %d", len(informerGenFlagSet), len(informerGenV0372Flags))
	}
}
