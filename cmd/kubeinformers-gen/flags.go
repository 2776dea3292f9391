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
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// This file is informer-gen's command line: every flag informer-gen
// v0.37.2 takes (k8s.io/code-generator's cmd/informer-gen/args, its
// --lint-rules, and the klog flags its main adds), how -h lists them, and
// what -v says about the ones that mean nothing here.

// igFlag is one of informer-gen's flags.
type igFlag struct {
	name string
	// typ is the value type -h shows ("" for a bool flag).
	typ   string
	usage string
	// def is the default -h shows, if any.
	def string
	// noEffect, if set, says why the flag means nothing for
	// kubeinformers-gen; it is accepted and, at -v 1 or more, this is said.
	noEffect string
	// check validates a value of a flag that is accepted without effect,
	// as informer-gen's parser would.
	check func(string) error
}

const klogNoEffect = "a klog flag: kubeinformers-gen writes no log, only its errors (and, at -v 1 or more, these notes) to stderr"

// lintRules are the values informer-gen's --lint-rules takes.
var lintRules = []string{"known-tags-only", "require-explicit-disablement"}

// informerGenFlagSet lists informer-gen's flags in the order its -h does
// (sorted by name).
var informerGenFlagSet = []igFlag{
	{name: "add_dir_header", usage: "If true, adds the file directory to the header of the log messages", noEffect: klogNoEffect},
	{name: "alsologtostderr", usage: "log to standard error as well as files (no effect when -logtostderr=true)", noEffect: klogNoEffect},
	{name: "alsologtostderrthreshold", typ: "severity", usage: "logs at or above this threshold go to stderr when -alsologtostderr=true (no effect when -logtostderr=true)", noEffect: klogNoEffect, check: checkSeverity},
	{name: "go-header-file", typ: "string", usage: "the path to a file containing boilerplate header text; the string \"YEAR\" will be replaced with the current 4-digit year"},
	{name: "internal-clientset-package", typ: "string", usage: "the Go import-path of the internal clientset to use", noEffect: "informer-gen uses it only for internal (unversioned) API types; kubeinformers-gen generates informers for versioned types, whose clientset is --versioned-clientset-package"},
	{name: "legacy_stderr_threshold_behavior", usage: "If true, stderrthreshold is ignored when logtostderr=true (legacy behavior). If false, stderrthreshold is honored even when logtostderr=true", def: "true", noEffect: klogNoEffect},
	{name: "lint-rules", typ: "strings", usage: "Comma-separated list of tag-checking lint rules to enable. Supports: " + strings.Join(lintRules, ","), noEffect: "the rule names are checked as informer-gen checks them, but kubeinformers-gen does not lint +k8s: tags: it reads only +genclient, +groupName and +groupGoName, and an unknown or misspelt +genclient tag is already an error; run client-gen (kube_codegen.sh's gen_client does) for the +k8s: lint", check: checkLintRules},
	{name: "listers-package", typ: "string", usage: "the Go import-path of the listers to use"},
	{name: "log_backtrace_at", typ: "traceLocation", usage: "when logging hits line file:N, emit a stack trace", def: ":0", noEffect: klogNoEffect},
	{name: "log_dir", typ: "string", usage: "If non-empty, write log files in this directory (no effect when -logtostderr=true)", noEffect: klogNoEffect},
	{name: "log_file", typ: "string", usage: "If non-empty, use this log file (no effect when -logtostderr=true)", noEffect: klogNoEffect},
	{name: "log_file_max_size", typ: "uint", usage: "Defines the maximum size a log file can grow to (no effect when -logtostderr=true). Unit is megabytes. If the value is 0, the maximum file size is unlimited.", def: "1800", noEffect: klogNoEffect, check: checkUint},
	{name: "logtostderr", usage: "log to standard error instead of files", def: "true", noEffect: klogNoEffect},
	{name: "one_output", usage: "If true, only write logs to their native severity level (vs also writing to each lower severity level; no effect when -logtostderr=true)", noEffect: klogNoEffect},
	{name: "output-dir", typ: "string", usage: "the base directory under which to generate results"},
	{name: "output-pkg", typ: "string", usage: "the Go import-path of the generated results"},
	{name: "plural-exceptions", typ: "strings", usage: "list of comma separated plural exception definitions in Type:PluralizedType format"},
	{name: "single-directory", usage: "if true, omit the intermediate \"internalversion\" and \"externalversions\" subdirectories"},
	{name: "skip_headers", usage: "If true, avoid header prefixes in the log messages", noEffect: klogNoEffect},
	{name: "skip_log_headers", usage: "If true, avoid headers when opening log files (no effect when -logtostderr=true)", noEffect: klogNoEffect},
	{name: "stderrthreshold", typ: "severity", usage: "logs at or above this threshold go to stderr when writing to files and stderr (no effect when -logtostderr=true or -alsologtostderr=true unless -legacy_stderr_threshold_behavior=false)", def: "2", noEffect: klogNoEffect, check: checkSeverity},
	{name: "v", typ: "Level", usage: "number for the log level verbosity; at 1 or more kubeinformers-gen says which given flags have no effect here"},
	{name: "versioned-clientset-package", typ: "string", usage: "the Go import-path of the versioned clientset to use"},
	{name: "vmodule", typ: "moduleSpec", usage: "comma-separated list of pattern=N settings for file-filtered logging", noEffect: klogNoEffect},
}

func lookupFlag(name string) (igFlag, bool) {
	i := slices.IndexFunc(informerGenFlagSet, func(f igFlag) bool { return f.name == name })
	if i < 0 {
		return igFlag{}, false
	}
	return informerGenFlagSet[i], true
}

func checkSeverity(v string) error {
	switch strings.ToUpper(v) {
	case "INFO", "WARNING", "ERROR", "FATAL", "0", "1", "2", "3":
		return nil
	}
	return fmt.Errorf("unknown severity %q (INFO, WARNING, ERROR, FATAL or 0 to 3)", v)
}

func checkUint(v string) error {
	_, err := strconv.ParseUint(v, 0, 64)
	return err
}

func checkLintRules(v string) error {
	for _, rule := range strings.Split(v, ",") {
		if rule = strings.TrimSpace(rule); rule != "" && !slices.Contains(lintRules, rule) {
			return fmt.Errorf("unrecognized rule in --lint-rules: %s", rule)
		}
	}
	return nil
}

// noEffectFlags registers on fs every flag that is accepted without
// effect; given records each one given, with its values.
func noEffectFlags(fs *flag.FlagSet, given map[string][]string) {
	for _, f := range informerGenFlagSet {
		if f.noEffect == "" {
			continue
		}
		record := func(v string) error {
			if f.check != nil {
				if err := f.check(v); err != nil {
					return err
				}
			}
			given[f.name] = append(given[f.name], v)
			return nil
		}
		if f.typ == "" {
			fs.Var(boolFunc(record), f.name, f.usage)
		} else {
			fs.Func(f.name, f.usage, record)
		}
	}
}

// boolFunc is flag.BoolFunc that also takes -flag=false, as pflag does.
type boolFunc func(string) error

func (f boolFunc) Set(v string) error {
	if _, err := strconv.ParseBool(v); err != nil {
		return err
	}
	return f(v)
}
func (f boolFunc) String() string   { return "" }
func (f boolFunc) IsBoolFlag() bool { return true }

// noteNoEffect says, at verbosity 1 or more, which given flags mean nothing
// here and why.
func noteNoEffect(w io.Writer, verbosity int, given map[string][]string) {
	if verbosity < 1 {
		return
	}
	for _, f := range informerGenFlagSet {
		if values, ok := given[f.name]; ok {
			fmt.Fprintf(w, "kubeinformers-gen: --%s %s: accepted, no effect: %s\n", f.name, strings.Join(values, ","), f.noEffect)
		}
	}
}

// usageOutput is where -h writes (informer-gen's writes to stderr too), and
// noteOutput where -v's notes go.
var (
	usageOutput io.Writer = os.Stderr
	noteOutput  io.Writer = os.Stderr
)

// printInformerGenUsage lists informer-gen's flags as informer-gen's -h
// does.
func printInformerGenUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage of kubeinformers-gen (informer-gen's command line; kubeinformers-gen [flags] INPUT-PACKAGE...):")
	left := make([]string, len(informerGenFlagSet))
	width := 0
	for i, f := range informerGenFlagSet {
		l := "      --" + f.name
		if f.name == "v" {
			l = "  -v, --v"
		}
		if f.typ != "" {
			l += " " + f.typ
		}
		left[i] = l
		width = max(width, len(l))
	}
	for i, f := range informerGenFlagSet {
		usage := f.usage
		if f.def != "" {
			usage += " (default " + f.def + ")"
		}
		if f.noEffect != "" {
			usage += " [accepted; no effect in kubeinformers-gen]"
		}
		fmt.Fprintf(w, "%-*s   %s\n", width, left[i], usage)
	}
}
