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

package informer

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
)

// budgetIndexer is the indexer the factory's informers hand out
// (GetIndexer, and so every lister): while the informer is stopped over
// its memory budget, each read that can return an error returns why,
// instead of an empty answer; List and ListKeys, which cannot, return
// the emptied cache. The informer's own pipeline uses the inner indexer.
type budgetIndexer struct {
	cache.Indexer
	budget *budget.Account
}

func (ix *budgetIndexer) Get(obj any) (any, bool, error) {
	if err := ix.budget.Stopped(); err != nil {
		return nil, false, err
	}
	return ix.Indexer.Get(obj)
}

func (ix *budgetIndexer) GetByKey(key string) (any, bool, error) {
	if err := ix.budget.Stopped(); err != nil {
		return nil, false, err
	}
	return ix.Indexer.GetByKey(key)
}

func (ix *budgetIndexer) Index(indexName string, obj any) ([]any, error) {
	if err := ix.budget.Stopped(); err != nil {
		return nil, err
	}
	return ix.Indexer.Index(indexName, obj)
}

func (ix *budgetIndexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	if err := ix.budget.Stopped(); err != nil {
		return nil, err
	}
	return ix.Indexer.IndexKeys(indexName, indexedValue)
}

func (ix *budgetIndexer) ByIndex(indexName, indexedValue string) ([]any, error) {
	if err := ix.budget.Stopped(); err != nil {
		return nil, err
	}
	return ix.Indexer.ByIndex(indexName, indexedValue)
}
