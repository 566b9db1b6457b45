package ring

import (
	"reflect"
	"sync"
	"unsafe"

	"gvisor.dev/gvisor/pkg/atomicbitops"
	"gvisor.dev/gvisor/pkg/buffer"
)

// Half-page reuse needs to know whether anybody besides the ring still
// holds a page: the question Linux answers with page_ref_count. A gVisor
// view's chunk keeps that count but does not export it, so its location is
// found once by reflection, checked against the expected types, and read
// atomically. If gVisor's layout ever changes, chunkRefs reports false and
// the ring stops reusing handed-up pages (correct, only slower; the
// rx_page_allocs counter shows it). It is found at the first question,
// not at init: reflection is slow to start under emulation, and a boot
// need not wait for it.
var chunkLayout = sync.OnceValue(func() (l struct {
	ok             bool
	chunkOff, refs uintptr
}) {
	vt := reflect.TypeOf(buffer.View{})
	cf, ok := vt.FieldByName("chunk")
	if !ok || cf.Type.Kind() != reflect.Pointer || cf.Type.Elem().Kind() != reflect.Struct {
		return l
	}
	rf, ok := cf.Type.Elem().FieldByName("refCount")
	if !ok || rf.Type != reflect.TypeOf(atomicbitops.Int64{}) {
		return l
	}
	// FieldByName resolved a promoted field: add up its path's offsets.
	off := uintptr(0)
	t := cf.Type.Elem()
	for _, i := range rf.Index {
		f := t.Field(i)
		off += f.Offset
		t = f.Type
	}
	l.ok, l.chunkOff, l.refs = true, cf.Offset, off
	return l
})

// chunkRefs returns how many views share v's memory, and false if that
// cannot be known.
func chunkRefs(v *buffer.View) (int64, bool) {
	l := chunkLayout()
	if !l.ok || v == nil {
		return 0, false
	}
	c := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(v), l.chunkOff))
	if c == nil {
		return 0, false
	}
	n := (*atomicbitops.Int64)(unsafe.Add(c, l.refs)).Load()
	return n & 0xffffffff, true // the high half counts speculative references
}
