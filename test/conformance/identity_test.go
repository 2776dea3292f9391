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

package conformance

import (
	"io"
	"os"
	"reflect"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

// TestInformerIdentity checks that every informer registers its identity
// under the GVR that ForResource accepts (the API server's plural), and
// counts how many client-go gets wrong. InformerName.WithResource reports
// a GVR as not reserved when an informer already registered it.
//
// client-go up to v0.37 registers informers of 14 resources under misspelt
// plurals (networkpolicys, ingresss, …: 33 of the 147 GVRs of v0.37.2;
// README.md's comparison table); v0.38 fixed them. The expectation follows
// the client-go this test is built with, so that the next lane
// (hack/next.sh) passes and a change in either direction is still caught.
// The two are told apart by an interface method that v0.38 added
// (SharedInformer.SetShardSelector): client-go has no version constant, and
// a test binary carries no module versions.
func TestInformerIdentity(t *testing.T) {
	// Probing a taken GVR logs a "duplicate registration" error per
	// resource; that is the point here, so keep the test output readable.
	// klog's output is swapped under its own lock: klog.SetLogger is not
	// safe while informers of earlier tests may still be logging (a
	// sharded watch's goroutine stopping its fake watcher raced with it).
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	defer func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()

	oursName, err := cache.NewInformerName("conformance-ours")
	if err != nil {
		t.Fatal(err)
	}
	upName, err := cache.NewInformerName("conformance-upstream")
	if err != nil {
		t.Fatal(err)
	}
	ours := informers.NewSharedInformerFactoryWithOptions(fake.NewSimpleClientset(), 0, informers.WithInformerName(oursName))
	up := upstream.NewSharedInformerFactoryWithOptions(fake.NewSimpleClientset(), 0, upstream.WithInformerName(upName))
	defer ours.Shutdown()
	defer up.Shutdown()
	for _, r := range resources {
		r.ours(ours)
		r.upstream(up)
	}
	upstreamWrong := 0
	for _, r := range resources {
		if oursName.WithResource(r.gvr).Reserved() {
			t.Errorf("%s: no informer registered this GVR", r.gvr)
		}
		if upName.WithResource(r.gvr).Reserved() {
			upstreamWrong++
		}
	}
	_, v038 := reflect.TypeFor[cache.SharedInformer]().MethodByName("SetShardSelector")
	release := "before v0.38"
	if v038 {
		release = "v0.38 or later"
	}
	t.Logf("identity GVR differs from the served resource: ours 0, client-go (%s) %d of %d", release, upstreamWrong, len(resources))
	switch {
	case !v038 && upstreamWrong == 0:
		t.Errorf("client-go (%s) registered every identity correctly; the comparison no longer shows a difference", release)
	case v038 && upstreamWrong != 0:
		t.Errorf("client-go (%s) registered %d identities under another GVR than the served resource; v0.38 registers none", release, upstreamWrong)
	}
}
