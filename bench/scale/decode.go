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
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The decode comparison (issue 26): what the wire encoding costs a sync,
// in the client and in the API server. Its summary line is printed for an N
// at which the run measured the variants it compares.
const (
	// leanVariant is the setup docs/lean-memory.md recommends for large
	// clusters: WithLeanMemory() on a clientset that asks for protobuf
	// (client-go's generated clients do when the rest.Config sets no
	// content type, as here).
	leanVariant = "ours-lean"
)

// decodeVariants are the runs the decode line compares: client-go by
// default (protobuf, see variants.go), client-go over JSON, client-go with
// kube-controller-manager's content types, this library by default and the
// lean setup.
var decodeVariants = []string{"upstream", "upstream-json", "upstream-protobuf", "ours", leanVariant}

// decodeMeasured reports whether r holds every run the decode line
// compares.
func decodeMeasured(r map[string]*summary) bool {
	for _, v := range decodeVariants {
		if r[v] == nil {
			return false
		}
	}
	return true
}

func apiserverCPUOf(s *summary) float64 { return s.APIServerCPU.Median }

// decodeLine is the machine-readable summary of the decode comparison at
// n. "upstream" is client-go with its defaults, which ask for protobuf;
// upstream-json is the JSON client the issue took as the default, so the
// line gives the lean setup against both.
func decodeLine(rep *runReport, n int) string {
	r := rep.Results[n]
	lean, up := r[leanVariant], r["upstream"]
	return fmt.Sprintf("bench-scale-decode N=%d: cpu lean/upstream=%s lean/upstream-json=%s lean/upstream-protobuf=%s ours/upstream=%s; heap lean/upstream=%s; stream peak lean/upstream=%s; apiserver cpu lean/upstream=%s lean/upstream-json=%s",
		n,
		ratio(lean, up, cpuOf), ratio(lean, r["upstream-json"], cpuOf), ratio(lean, r["upstream-protobuf"], cpuOf), ratio(r["ours"], up, cpuOf),
		ratio(lean, up, heapOf), ratio(lean, up, peakOf),
		ratio(lean, up, apiserverCPUOf), ratio(lean, r["upstream-json"], apiserverCPUOf))
}

// pidCPU is the user and system CPU time of process pid, in seconds,
// from /proc/pid/stat (Linux).
func pidCPU(pid int) (float64, error) {
	if pid <= 0 {
		return 0, errors.New("no process")
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(raw))
}

// clockTicks is USER_HZ, the unit of /proc/pid/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/pid/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so the fields are counted after its closing one.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat line without a command name: %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state), so field k is fields[k-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat line has %d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return float64(utime+stime) / clockTicks, nil
}
