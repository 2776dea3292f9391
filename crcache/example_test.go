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

package crcache_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
)

// A manager whose cache is this library's: the one line is NewCache.
func ExampleNew() {
	var cfg *rest.Config // from ctrl.GetConfigOrDie() in a real main
	mgr, err := manager.New(cfg, manager.Options{
		NewCache: crcache.New,
	})
	if err != nil {
		return
	}
	_ = mgr.Start(context.Background())
}

// NewCache takes the factory's options; the cache it returns is a
// *crcache.Cache, with readiness and namespaces changed at run time.
func ExampleNewCache() {
	var cfg *rest.Config
	mgr, err := manager.New(cfg, manager.Options{
		NewCache: crcache.NewCache(
			informers.WithAPIDiscovery(), // kinds whose CRD comes and goes
			informers.WithLeanMemory(),
			informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{
				KeepFields: []string{"spec.nodeName", "status.phase", "status.conditions"},
			}),
		),
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{"team-a": {}}},
	})
	if err != nil {
		return
	}
	c := mgr.GetCache().(*crcache.Cache)
	_ = mgr.AddReadyzCheck("informers", c.ReadyzCheck)
	go func() { _ = mgr.Start(context.Background()) }()

	// Later, while it runs: watch team-b too.
	_ = c.SetNamespaces("team-a", "team-b")
}
