package ring

import (
	"testing"
	"unsafe"

	"github.com/ether9/ether9/drivers/internal/fakedev"
	"github.com/ether9/ether9/kernel"
)

// An RX buffer smaller than a page still has its page to itself: the
// IOMMU maps whole pages, so nothing else may live where the device can
// write.
func TestRxBuffersOwnTheirPages(t *testing.T) {
	r, err := NewRxRing(fakedev.NewDMA(), 16, 16, 2048)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Refill(func(int, kernel.DMAAddr) {})
	for i := range r.slots {
		v := r.slots[i].view
		if v == nil {
			continue
		}
		b := v.AsSlice()
		if len(b) != 2048 || cap(b) < kernel.PageSize || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%kernel.PageSize != 0 {
			t.Fatalf("slot %d: a %d-byte buffer at %p in %d bytes of chunk, want a page of its own", i, len(b), unsafe.SliceData(b), cap(b))
		}
	}
}
