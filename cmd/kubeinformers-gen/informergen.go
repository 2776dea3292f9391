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
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// informerGenMode reports whether args are informer-gen's command line
// rather than the library's (-module-dir, -out, …): any of informer-gen's
// flags, or input packages given as arguments.
func informerGenMode(args []string) bool {
	for i, a := range args {
		if a == "--" {
			return i+1 < len(args)
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if _, ok := lookupFlag(name); ok {
			return true
		}
	}
	return false
}

// informerGenArgs is informer-gen's command line.
type informerGenArgs struct {
	outputDir, outputPkg, headerFile string
	clientset, listers               string
	singleDirectory                  bool
	pluralExceptions                 map[string]string
	inputs                           []string
	// verbosity is -v; noEffect are the given flags that mean nothing
	// here, with their values (flags.go).
	verbosity int
	noEffect  map[string][]string
}

func parseInformerGenArgs(args []string) (informerGenArgs, error) {
	var a informerGenArgs
	a.pluralExceptions = map[string]string{}
	a.noEffect = map[string][]string{}
	fs := flag.NewFlagSet("kubeinformers-gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // -h is flag.ErrHelp: runInformerGen lists informer-gen's flags
	fs.StringVar(&a.outputDir, "output-dir", "", "the base directory under which to generate results")
	fs.StringVar(&a.outputPkg, "output-pkg", "", "the Go import-path of the generated results")
	fs.StringVar(&a.headerFile, "go-header-file", "", "a file with the header text of every generated file; \"YEAR\" becomes the current year")
	fs.StringVar(&a.clientset, "versioned-clientset-package", "", "the Go import-path of the versioned clientset to use")
	fs.StringVar(&a.listers, "listers-package", "", "the Go import-path of the listers to use")
	fs.BoolVar(&a.singleDirectory, "single-directory", false, "if true, omit the intermediate \"externalversions\" subdirectory")
	fs.Func("plural-exceptions", "comma-separated Type:PluralType exceptions to the pluralizer (repeatable)", func(v string) error {
		for _, e := range strings.Split(v, ",") {
			e = strings.TrimSpace(e)
			if e == "" {
				continue
			}
			kind, plural, ok := strings.Cut(e, ":")
			if !ok || kind == "" || plural == "" || strings.Contains(plural, ":") {
				return fmt.Errorf("invalid plural exception %q: want Type:PluralType", e)
			}
			a.pluralExceptions[kind] = plural
		}
		return nil
	})
	fs.IntVar(&a.verbosity, "v", 0, "log verbosity; at 1 or more, the given flags that have no effect here are named")
	noEffectFlags(fs, a.noEffect)
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	a.inputs = fs.Args()
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"--output-dir", a.outputDir}, {"--output-pkg", a.outputPkg},
		{"--versioned-clientset-package", a.clientset}, {"--listers-package", a.listers},
	} {
		if f.value == "" {
			missing = append(missing, f.name+" must be specified")
		}
	}
	if len(a.inputs) == 0 {
		missing = append(missing, "no input packages: give the API packages (import paths or patterns) as arguments")
	}
	if len(missing) > 0 {
		return a, errors.New(strings.Join(missing, "; "))
	}
	return a, nil
}

// runInformerGen generates, for the API packages named on informer-gen's
// command line, the packages informer-gen would generate, bound to a
// kubeinformers factory. It writes nothing unless everything rendered.
func runInformerGen(args []string) error {
	a, err := parseInformerGenArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		printInformerGenUsage(usageOutput)
		return nil
	}
	if err != nil {
		return err
	}
	noteNoEffect(noteOutput, a.verbosity, a.noEffect)
	header, err := readHeader(a.headerFile)
	if err != nil {
		return err
	}
	pkgs, err := loadPackages(".", a.inputs)
	if err != nil {
		return err
	}
	groups, err := buildModelWith(pkgs, modelOptions{strict: true, plural: gengoPlural(a.pluralExceptions)})
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return fmt.Errorf("no +genclient type in %s can be listed and watched: nothing to generate", strings.Join(a.inputs, " "))
	}
	outDir, outPkg := a.outputDir, a.outputPkg
	if !a.singleDirectory {
		outDir, outPkg = filepath.Join(outDir, "externalversions"), path.Join(outPkg, "externalversions")
	}
	cfg := extConfig{
		Header:    header,
		Package:   outPkg,
		Clientset: a.clientset,
		Listers:   a.listers,
		Library:   libraryModule,
	}
	if err := checkClients(".", cfg, groups, pkgs); err != nil {
		return err
	}
	files, err := emitExternal(cfg, groups)
	if err != nil {
		return err
	}
	return replaceTree(outDir, files)
}

// libraryModule is the import path of the library whose factory the
// generated informers share.
const libraryModule = "github.com/kubeinformers/informers"

// readHeader returns the header every generated file starts with: the
// --go-header-file text, with "YEAR" replaced by the current year as
// informer-gen does, and our generated-code line.
func readHeader(file string) (string, error) {
	var b bytes.Buffer
	if file != "" {
		text, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--go-header-file: %w", err)
		}
		b.Write(bytes.ReplaceAll(text, []byte("YEAR"), []byte(strconv.Itoa(time.Now().UTC().Year()))))
		b.WriteByte('\n')
	}
	b.WriteString(generatedLine)
	b.WriteByte('\n')
	return b.String(), nil
}

// generatedBy are the lines that mark a file as generated by us or by
// informer-gen: replaceTree removes such files from the output directory,
// so that switching from informer-gen leaves none of its files behind.
var generatedBy = [][]byte{
	[]byte(generatedLine),
	[]byte("// Code generated by informer-gen. DO NOT EDIT."),
}

// replaceTree writes files (paths relative to dir) into a temporary
// directory beside dir, then replaces the generated files under dir with
// them. Hand-written files under dir are kept.
func replaceTree(dir string, files map[string][]byte) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".kubeinformers-gen-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := writeFiles(tmp, files); err != nil {
		return err
	}
	if err := removeGenerated(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(tmp, filepath.FromSlash(name)), dst); err != nil {
			return err
		}
	}
	return nil
}

// removeGenerated deletes the generated .go files under dir and the
// directories that become empty.
func removeGenerated(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			for _, g := range generatedBy {
				if bytes.Equal(bytes.TrimSpace(line), g) {
					return os.Remove(p)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Deepest first, so that a parent emptied by its children goes too.
	for i := len(dirs) - 1; i >= 0; i-- {
		if entries, err := os.ReadDir(dirs[i]); err == nil && len(entries) == 0 {
			if err := os.Remove(dirs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
