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

package budget

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// CgroupMemoryMax is the file that holds the container's memory limit:
// cgroup v2's memory.max of the process's cgroup, as a container sees it
// (its cgroup namespace puts its own cgroup at the root). Tests point it
// elsewhere.
var CgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// ErrNoLimit says that the container has no memory limit: memory.max is
// "max", or there is no cgroup v2 memory controller to read.
var ErrNoLimit = errors.New("no container memory limit")

// CheckFraction checks the fraction of WithMemoryBudgetFraction.
func CheckFraction(f float64) error {
	if math.IsNaN(f) || f <= 0 || f > 1 {
		return fmt.Errorf("the fraction %v is not in (0, 1]", f)
	}
	return nil
}

// FromCgroup returns fraction f of the memory limit in path (cgroup v2's
// memory.max). A limit of "max", or no such file, is ErrNoLimit; anything
// else that is not a number of bytes is an error that names the file.
func FromCgroup(path string, f float64) (int64, error) {
	if err := CheckFraction(f); err != nil {
		return 0, err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s does not exist (no cgroup v2 memory controller)", ErrNoLimit, path)
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return 0, fmt.Errorf("%w: %s is %q", ErrNoLimit, path, s)
	}
	limit, err := strconv.ParseInt(s, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("%s holds %q, not a memory limit in bytes", path, s)
	}
	return max(1, int64(float64(limit)*f)), nil
}

// FractionPool is the pool of WithMemoryBudgetFraction(f): f of the limit
// in CgroupMemoryMax; without a limit a pool of none, whose Note says so.
func FractionPool(f float64) (*Pool, error) {
	limit, err := FromCgroup(CgroupMemoryMax, f)
	pool := NewPool(limit)
	if errors.Is(err, ErrNoLimit) {
		pool.Note, err = fmt.Sprintf("WithMemoryBudgetFraction(%v): no memory budget: %v", f, err), nil
	}
	return pool, err
}

// CheckBytes checks a budget in bytes; zero is allowed where it means none.
func CheckBytes(bytes int64, zero bool) error {
	if bytes < 0 || bytes == 0 && !zero {
		return fmt.Errorf("a budget of %d bytes: it must be positive (omit the option for none)", bytes)
	}
	return nil
}
