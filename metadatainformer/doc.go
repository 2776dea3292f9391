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

// Package metadatainformer is a drop-in for client-go's
// k8s.io/client-go/metadata/metadatainformer: the same identifiers with the
// same signatures and behaviour, so that a controller built on client-go's
// metadata factory (a garbage collector, a quota controller) switches by
// changing its import path.
//
// Its informers live in the module's one factory ([informers.Factory]), so
// the factories it returns also implement [Factory]: RemoveInformer stops
// the informer of a resource, such as a custom resource whose
// CustomResourceDefinition was deleted, which client-go's would retry for
// ever; Ready and SyncStatus say which informer is not ready and why.
// [NewSharedInformerFactoryWithOptions] also takes the module's own options
// ([WithFactoryOptions]): lean memory, list modes, sharding, namespaces and
// per-resource options. [New] returns their mistakes as an error.
//
// As in client-go, ForResource returns an informer of
// *metav1.PartialObjectMetadata fed by the metadata client for every
// resource, built-in ones included, and WaitForCacheSync is keyed by
// resource. Unlike client-go's, a factory informer reports synced only once
// its first watch has returned, so that a change made right after
// WaitForCacheSync is never lost, also with client-go's fake metadata
// client.
package metadatainformer
