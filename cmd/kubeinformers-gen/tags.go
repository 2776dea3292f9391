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
	"fmt"
	"sort"
	"strings"
)

// allVerbs are the verbs a +genclient type gets unless its tags say
// otherwise. The names follow client-gen.
var allVerbs = []string{
	"create", "update", "updateStatus", "delete", "deleteCollection",
	"get", "list", "watch", "patch", "apply", "applyStatus",
}

// readonlyVerbs are the verbs of +genclient:readonly.
var readonlyVerbs = []string{"get", "list", "watch"}

// genclient is what the +genclient tags of one type say.
type genclient struct {
	enabled       bool
	nonNamespaced bool
	verbs         map[string]bool
}

// parseGenclient reads the +genclient tags with client-gen's semantics:
//
//	+genclient                      the type gets a client (and all verbs)
//	+genclient=false                it does not
//	+genclient:nonNamespaced        the type is cluster-scoped
//	+genclient:noVerbs              no verbs at all
//	+genclient:readonly             only get, list and watch
//	+genclient:onlyVerbs=a,b        only these verbs
//	+genclient:skipVerbs=a,b        all verbs but these
//	+genclient:noStatus             no status subresource
//	+genclient:method=…             an extra method; no effect on informers
//
// Any other +genclient: tag, an unknown verb, or conflicting verb tags is
// an error, so that a typo cannot silently drop or add an informer.
func parseGenclient(lines []string) (genclient, error) {
	var gc genclient
	var only, skip []string
	var haveOnly, haveSkip, noVerbs, readonly bool
	for _, line := range lines {
		switch {
		case line == "+genclient" || line == "+genclient=true":
			gc.enabled = true
		case line == "+genclient=false":
			gc.enabled = false
		case strings.HasPrefix(line, "+genclient="):
			return gc, fmt.Errorf("tag %q: want +genclient, +genclient=true or +genclient=false", line)
		case strings.HasPrefix(line, "+genclient:"):
			name, value, hasValue := strings.Cut(strings.TrimPrefix(line, "+genclient:"), "=")
			switch name {
			case "nonNamespaced":
				gc.nonNamespaced = !hasValue || value == "true"
			case "noVerbs":
				noVerbs = true
			case "readonly":
				readonly = true
			case "noStatus", "method":
			case "onlyVerbs", "skipVerbs":
				verbs, err := parseVerbs(line, value)
				if err != nil {
					return gc, err
				}
				if name == "onlyVerbs" {
					haveOnly, only = true, verbs
				} else {
					haveSkip, skip = true, verbs
				}
			default:
				return gc, fmt.Errorf("unknown tag %q (known: nonNamespaced, noVerbs, readonly, onlyVerbs, skipVerbs, noStatus, method)", line)
			}
		}
	}
	set := 0
	for _, b := range []bool{noVerbs, readonly, haveOnly, haveSkip} {
		if b {
			set++
		}
	}
	if set > 1 {
		return gc, fmt.Errorf("at most one of +genclient:noVerbs, readonly, onlyVerbs and skipVerbs may be set")
	}
	gc.verbs = map[string]bool{}
	switch {
	case noVerbs:
	case readonly:
		for _, v := range readonlyVerbs {
			gc.verbs[v] = true
		}
	case haveOnly:
		for _, v := range only {
			gc.verbs[v] = true
		}
	default:
		for _, v := range allVerbs {
			gc.verbs[v] = true
		}
		for _, v := range skip {
			delete(gc.verbs, v)
		}
	}
	return gc, nil
}

func parseVerbs(line, value string) ([]string, error) {
	if value == "" {
		return nil, fmt.Errorf("tag %q: want a comma-separated list of verbs", line)
	}
	var out []string
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		known := false
		for _, a := range allVerbs {
			known = known || a == v
		}
		if !known {
			return nil, fmt.Errorf("tag %q: unknown verb %q (known: %s)", line, v, strings.Join(allVerbs, ", "))
		}
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

// parseValueTags collects +name=value tags that are not +genclient tags,
// such as +groupName= and +groupGoName=. A later line wins.
func parseValueTags(lines []string) map[string]string {
	out := map[string]string{}
	for _, line := range lines {
		if !strings.HasPrefix(line, "+") || strings.HasPrefix(line, "+genclient") {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "+"), "=")
		if !ok {
			continue
		}
		out[name] = strings.TrimSpace(value)
	}
	return out
}

// tagLines extracts the "+…" lines of comment text.
func tagLines(text []string) []string {
	var out []string
	for _, l := range text {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "+") {
			out = append(out, l)
		}
	}
	return out
}
