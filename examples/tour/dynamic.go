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

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers"
)

var deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")

// showCustomAndMetadata asks the running factory for a custom resource
// (ForResource serves it with a dynamic informer) and for the metadata of
// deployments (ForMetadata). Informers requested after Start run once Start
// is called again, as in client-go.
func (t *tour) showCustomAndMetadata() error {
	heading(t.out, "4. Custom resources and metadata in the same factory: ForResource, ForMetadata")
	custom, err := t.factory.ForResource(t.c.q.custom)
	if err != nil {
		return err
	}
	metadataOnly, err := t.factory.ForMetadata(deploymentsGVR)
	if err != nil {
		return err
	}
	t.factory.StartWithContext(t.ctx)
	if err := waitForSync(t.ctx, t.factory); err != nil {
		return err
	}

	if err := printObjects(t, "ForResource("+resourceName(t.c.q.custom)+"), a dynamic informer", custom); err != nil {
		return err
	}
	if err := printObjects(t, "ForMetadata("+resourceName(deploymentsGVR)+")", metadataOnly); err != nil {
		return err
	}
	return t.showForResourceTyped()
}

// showForResourceTyped looks a built-in resource up by name: ForResource
// returns the typed informer the accessor holds. A misspelt resource is
// ErrUnknownResource, with what was probably meant.
func (t *tour) showForResourceTyped() error {
	generic, err := t.factory.ForResource(deploymentsGVR)
	if err != nil {
		return err
	}
	same := generic.Informer() == t.factory.Apps().V1().Deployments().Informer()
	fmt.Fprintf(t.out, "  ForResource(%s) is factory.Apps().V1().Deployments(): %t\n", resourceName(deploymentsGVR), same)

	misspelt := appsv1.SchemeGroupVersion.WithResource("deployment")
	_, err = t.factory.ForResource(misspelt)
	switch {
	case err == nil:
		return fmt.Errorf("ForResource(%s) succeeded, want ErrUnknownResource", misspelt)
	case !errors.Is(err, informers.ErrUnknownResource):
		return fmt.Errorf("ForResource(%s) = %w, want ErrUnknownResource", misspelt, err)
	}
	fmt.Fprintf(t.out, "  ForResource(%s), misspelt: ErrUnknownResource\n    %v\n", resourceName(misspelt), err)
	return nil
}

// printObjects prints how many objects, of which Go type, an informer
// holds, and their names.
func printObjects(t *tour, what string, informer informers.GenericInformer) error {
	objs, err := informer.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	names := make([]string, 0, len(objs))
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		names = append(names, key(m))
	}
	typeName := "no objects"
	if len(objs) > 0 {
		typeName = fmt.Sprintf("%T", objs[0])
	}
	fmt.Fprintf(t.out, "  %s: %d (%s)\n", what, len(objs), typeName)
	printSorted(t.out, "    ", names, func(name string) string { return name })
	return nil
}

// resourceName writes a resource as the factory's messages do, such as
// "pods (v1)" or "widgets.example.com/v1".
func resourceName(gvr schema.GroupVersionResource) string {
	return informers.InformerID{Form: informers.FormTyped, Resource: gvr}.String()
}
