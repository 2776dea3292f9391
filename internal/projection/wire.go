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

package projection

import (
	"fmt"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
)

// wirePlan is a projection of one protobuf message, by field number:
// fields[n] is nil for a field that is dropped, keepWhole for one kept
// whole, or the plan of a message field projected in depth (each
// occurrence of a repeated one).
type wirePlan struct {
	fields []*wirePlan
}

// keepWhole marks a field kept whole.
var keepWhole = &wirePlan{}

// newWirePlan reads the field numbers of n's fields from the protobuf
// tags of st. A field without a tag (an object's embedded TypeMeta, which
// the envelope carries) is not in the message.
func newWirePlan(st reflect.Type, n *node) *wirePlan {
	p := &wirePlan{}
	for i, c := range n.fields {
		f := st.Field(i)
		num := ProtobufNumber(f.Tag.Get("protobuf"))
		if num <= 0 {
			continue
		}
		sub := keepWhole
		if !c.all {
			sub = newWirePlan(structOf(f.Type), c)
		}
		for len(p.fields) <= num {
			p.fields = append(p.fields, nil)
		}
		p.fields[num] = sub
	}
	return p
}

func (p *wirePlan) field(num protowire.Number) *wirePlan {
	if int(num) < len(p.fields) && num > 0 {
		return p.fields[num]
	}
	return nil
}

// Cut cuts every field the projection drops out of b, the protobuf
// message of an object of its type (without the runtime.Unknown
// envelope), in place, and returns the shortened message. It returns b
// for a projection without a typed plan.
func (p *Projection) Cut(b []byte) ([]byte, error) {
	if p == nil || p.wire == nil {
		return b, nil
	}
	return p.wire.cut(b)
}

// cut drops from the message b, in place, the fields p does not keep,
// and returns the shortened message.
func (p *wirePlan) cut(b []byte) ([]byte, error) {
	w := 0
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[i+n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		start, tagEnd, end := i, i+n, i+n+m
		i = end
		sub := p.field(num)
		switch {
		case sub == nil:
			continue
		case sub == keepWhole || typ != protowire.BytesType:
			// Kept whole; a field of an unexpected wire type is kept for
			// the generated Unmarshal to refuse.
			w += copy(b[w:], b[start:end])
			continue
		}
		body, _ := protowire.ConsumeBytes(b[tagEnd:end])
		body, err := sub.cut(body)
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", num, err)
		}
		// The tag, then the new length, then the body. The new length
		// takes no more bytes than the old, and the body starts after the
		// old length, so nothing is overwritten before it is read.
		w += copy(b[w:], b[start:tagEnd])
		w = len(protowire.AppendVarint(b[:w], uint64(len(body))))
		w += copy(b[w:], body)
	}
	return b[:w], nil
}
