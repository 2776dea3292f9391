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
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internalinterfaces"
)

// SharedInformerOption configures a factory at construction. Pass options
// to [NewSharedInformerFactoryWithOptions] or [New].
type SharedInformerOption func(*sharedInformerFactory) *sharedInformerFactory

// WithCustomResyncConfig sets the resync period of individual types: each
// key is an object of the type (such as &corev1.Pod{}), each value its
// period. Types not listed use the factory's default.
//
// A nil key names no type and a negative period is no period; [New] reports
// either as an error, the other constructors log it and ignore the entry.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		for obj, period := range resyncConfig {
			t := reflect.TypeOf(obj)
			switch {
			case t == nil:
				factory.optionErrs = append(factory.optionErrs, fmt.Errorf("WithCustomResyncConfig: a nil key names no type (resync period %v)", period))
				continue
			case period < 0:
				factory.optionErrs = append(factory.optionErrs, fmt.Errorf("WithCustomResyncConfig: the resync period %v for %v is negative", period, t))
				continue
			}
			factory.customResync[t] = period
		}
		return factory
	}
}

// WithTweakListOptions sets a function that changes the options of every
// list and watch request the factory's informers make, for example to add a
// label or field selector. Listers then only see the matching objects.
// A nil function changes nothing.
func WithTweakListOptions(tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.tweakListOptions = tweakListOptions
		return factory
	}
}

// WithNamespace limits the factory's namespaced informers to one
// namespace. Cluster-scoped resources (nodes, namespaces, …) are not
// affected. The empty string, [metav1.NamespaceAll], means all namespaces.
func WithNamespace(namespace string) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if namespace != metav1.NamespaceAll {
			if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
				factory.optionErrs = append(factory.optionErrs, fmt.Errorf("WithNamespace: %q is not a valid namespace name: %s", namespace, strings.Join(msgs, "; ")))
			}
		}
		factory.namespace = namespace
		factory.namespaceSet = true
		return factory
	}
}

// WithTransform sets a function that every informer of the factory applies
// to objects before caching them, for example to drop managedFields and
// save memory. A nil function sets none.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.transform = transform
		return factory
	}
}

// WithInformerName sets the identity under which every informer of the
// factory registers its resource for metrics. Create it once at start-up
// with [cache.NewInformerName], which checks that the name is unique;
// Shutdown releases it.
//
// Each informer registers the resource the API server serves (for example
// networking.k8s.io/v1 "networkpolicies"), the same GVR that ForResource
// takes. client-go registers some under a misspelt plural such as
// "networkpolicys".
func WithInformerName(informerName *cache.InformerName) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.informerName = informerName
		return factory
	}
}

// WithDynamicClient gives the factory the dynamic client through which
// ForResource serves resources that are not built in, such as custom
// resources. [NewForConfig] sets one built from its config; this option
// replaces it, for example with a fake in unit tests. A nil client is an
// error from [New].
func WithDynamicClient(client dynamic.Interface) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if client == nil {
			factory.optionErrs = append(factory.optionErrs, errors.New("WithDynamicClient: the dynamic.Interface is nil"))
			return factory
		}
		factory.dynamicClient = client
		return factory
	}
}

// WithMetadataClient gives the factory the metadata client through which
// [Factory.ForMetadata] serves metadata-only informers. [NewForConfig] sets
// one built from its config; this option replaces it, for example with a
// fake in unit tests. A nil client is an error from [New].
func WithMetadataClient(client metadata.Interface) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if client == nil {
			factory.optionErrs = append(factory.optionErrs, errors.New("WithMetadataClient: the metadata.Interface is nil"))
			return factory
		}
		factory.metadataClient = client
		return factory
	}
}
