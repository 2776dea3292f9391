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

import "fmt"

// The projection comparison (issue 34): a lean cache that keeps only what
// a controller of Pods reads, against client-go's defaults and the lean
// cache.
const keepVariant = "ours-keep"

// keepFields are the fields ours-keep keeps: what a controller of Pods
// that schedules or counts them reads.
var keepFields = []string{"spec.nodeName", "status.phase", "status.conditions"}

// keepMeasured reports whether r holds every run the keep line compares.
func keepMeasured(r map[string]*summary) bool {
	return r["upstream"] != nil && r[leanVariant] != nil && r[keepVariant] != nil
}

// keepLine is the machine-readable summary of the projection comparison
// at n: the heap after sync, the CPU time to sync and the peak heap while
// streaming the initial list.
func keepLine(rep *runReport, n int) string {
	r := rep.Results[n]
	keep, up := r[keepVariant], r["upstream"]
	return fmt.Sprintf("bench-scale-keep N=%d: heap keep/upstream=%s keep/lean=%s; cpu keep/upstream=%s; stream peak keep/upstream=%s",
		n, ratio(keep, up, heapOf), ratio(keep, r[leanVariant], heapOf), ratio(keep, up, cpuOf), ratio(keep, up, peakOf))
}
