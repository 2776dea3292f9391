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

// Package docs checks the documentation a newcomer reads: README.md,
// README.ja.md, every page under docs/, and the quickstart example.
package docs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxReadme is the size README.md must stay within: a landing page, with
// the detail on the pages under docs/.
const maxReadme = 16000

// maxQuickstart is how many lines of Go, tests aside, examples/quickstart
// may have: a program a newcomer reads in a minute and copies.
const maxQuickstart = 150

// TestDocs checks the documentation of this repository.
func TestDocs(t *testing.T) {
	for _, problem := range check("..") {
		t.Error(problem)
	}
}

// TestCheckFindsProblems checks that check reports each kind of problem:
// a link to a missing file, a link to a missing heading, a page without
// its Japanese twin and the other way round, a README.md that is too
// large, and a quickstart that is too long.
func TestCheckFindsProblems(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readme := "# Title\n\n[ok](docs/a.md#a-heading) [gone](docs/gone.md) ![img](x.svg)\n\n```go\nm[k](v) // code: [no](link.md)\n```\n" + strings.Repeat("x", maxReadme)
	write("README.md", readme)
	write("README.ja.md", "# 題名\n\n[ok](docs/ja/a.md#見出しとテスト) [bad anchor](docs/ja/a.md#ない)\n")
	write("docs/a.md", "# A heading\n\n[back](../README.md#title) [self](#a-heading) [web](https://example.com/x.md) `[code](span.md)`\n")
	write("docs/ja/a.md", "# 見出しと（テスト）\n\n[戻る](../../README.ja.md#題名)\n")
	write("docs/only-en.md", "# Only English\n")
	write("docs/ja/only-ja.md", "# 日本語だけ\n")
	write("examples/quickstart/main.go", strings.Repeat("//\n", maxQuickstart-10))
	write("examples/quickstart/more.go", strings.Repeat("//\n", 11))
	write("examples/quickstart/main_test.go", strings.Repeat("//\n", 100))

	got := check(root)
	want := []string{
		`README.md: [gone](docs/gone.md): no such file docs/gone.md`,
		`README.md: [img](x.svg): no such file x.svg`,
		fmt.Sprintf("README.md: %d bytes, more than %d: move detail to a page under docs/", len(readme), maxReadme),
		`README.ja.md: [bad anchor](docs/ja/a.md#ない): docs/ja/a.md has no heading for #ない`,
		`docs/only-en.md has no Japanese twin docs/ja/only-en.md`,
		`docs/ja/only-ja.md has no English twin docs/only-ja.md`,
		fmt.Sprintf("examples/quickstart: %d lines of Go outside tests, more than %d", maxQuickstart+1, maxQuickstart),
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("check found:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// check returns every problem of the documentation under root, one
// sentence each.
func check(root string) []string {
	var problems []string
	pages := []string{"README.md", "README.ja.md"}
	for _, dir := range []string{"docs", filepath.Join("docs", "ja")} {
		matches, _ := filepath.Glob(filepath.Join(root, dir, "*.md"))
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			pages = append(pages, filepath.ToSlash(rel))
		}
	}
	for _, page := range pages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, l := range links(string(text)) {
			if p := checkLink(root, page, l); p != "" {
				problems = append(problems, fmt.Sprintf("%s: [%s](%s): %s", page, l.text, l.target, p))
			}
		}
		if page == "README.md" && len(text) > maxReadme {
			problems = append(problems, fmt.Sprintf("README.md: %d bytes, more than %d: move detail to a page under docs/", len(text), maxReadme))
		}
		dir, name := filepath.Split(filepath.FromSlash(page))
		switch filepath.Clean(dir) {
		case "docs":
			if !exists(filepath.Join(root, "docs", "ja", name)) {
				problems = append(problems, fmt.Sprintf("%s has no Japanese twin docs/ja/%s", page, name))
			}
		case filepath.Join("docs", "ja"):
			if !exists(filepath.Join(root, "docs", name)) {
				problems = append(problems, fmt.Sprintf("%s has no English twin docs/%s", page, name))
			}
		}
	}
	if n, err := quickstartLines(root); err != nil {
		problems = append(problems, err.Error())
	} else if n > maxQuickstart {
		problems = append(problems, fmt.Sprintf("examples/quickstart: %d lines of Go outside tests, more than %d", n, maxQuickstart))
	}
	return problems
}

// quickstartLines counts the lines of the .go files of examples/quickstart
// other than tests.
func quickstartLines(root string) (int, error) {
	files, err := filepath.Glob(filepath.Join(root, "examples", "quickstart", "*.go"))
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, errors.New("examples/quickstart: no Go files")
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		n += strings.Count(string(text), "\n")
	}
	return n, nil
}

type link struct{ text, target string }

var (
	linkRE  = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	codeRE  = regexp.MustCompile("`[^`]*`")
	fenceRE = regexp.MustCompile("(?m)^\\s*```")
)

// links returns the inline links and images of a Markdown text, outside
// code blocks and code spans.
func links(text string) []link {
	var out []link
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{text: m[1], target: m[2]})
		}
	}
	return out
}

// checkLink returns what is wrong with a link of page, or "" when its file
// (and heading, after #) exists. Links with a scheme are not followed.
func checkLink(root, page string, l link) string {
	if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(l.target, "#")
	file := page
	if path != "" {
		file = filepath.ToSlash(filepath.Join(filepath.Dir(page), filepath.FromSlash(path)))
		if file == ".." || strings.HasPrefix(file, "../") {
			return "outside the repository"
		}
		if !exists(filepath.Join(root, file)) {
			return "no such file " + file
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	text, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(anchors(string(text)), anchor) {
		return fmt.Sprintf("%s has no heading for #%s", file, anchor)
	}
	return ""
}

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// lower case, spaces as hyphens, punctuation other than - and _ dropped, a
// repeated anchor numbered -1, -2, ...
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
		}
		heading := strings.TrimLeft(line, "#")
		if inFence || heading == line || !strings.HasPrefix(heading, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	return out
}

// exists reports whether path is a file or directory. An error other than
// "not exist" (permissions, say) counts as existing: the link is not what
// is wrong.
func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
