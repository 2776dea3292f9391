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

package informers

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers/sharding"
)

// TestFactoryInformerRunning: a factory informer runs through Run as
// through RunWithContext, names its sync checker after the inner one,
// and refuses a transform once it runs.
func TestFactoryInformerRunning(t *testing.T) {
	f, err := New(fake.NewClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	inf := f.Core().V1().Pods().Informer()
	if inf.HasSyncedChecker().Name() == "" {
		t.Error("the sync checker has no name")
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(stop) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-inf.HasSyncedChecker().Done():
	case <-ctx.Done():
		t.Fatal("not synced 30 s after Run")
	}
	if err := inf.SetTransform(TransformStripManagedFields()); err == nil {
		t.Error("SetTransform on a running informer succeeded")
	}
	close(stop)
	<-done
}

// TestInformerIDString: a typed informer whose resource is not known is
// named by its Go type.
func TestInformerIDString(t *testing.T) {
	id := InformerID{Form: FormTyped, Type: reflect.TypeFor[*corev1.Secret]()}
	if got := id.String(); got != "*v1.Secret" {
		t.Errorf("String() = %q", got)
	}
}

// TestShardOptionErrors: shard options with a bad field name it as the
// caller wrote it, and fail closed.
func TestShardOptionErrors(t *testing.T) {
	bogus := sharding.Field("metadata.bogus")
	for name, opt := range map[string]SharedInformerOption{
		"WithShard":           WithShard(bogus, 0, 2),
		"WithShardMembership": WithShardMembership(&sharding.Membership{}, bogus),
	} {
		if _, err := New(fake.NewClientset(), 0, opt); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), string(bogus)) {
			t.Errorf("%s: %v, want an error naming the option and the field", name, err)
		}
	}
}
