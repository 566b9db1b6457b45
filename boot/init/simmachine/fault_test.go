package simmachine

import (
	"strings"
	"testing"
)

// A DMA to an address the NIC's domain does not map is refused by the
// VT-d model, printed on the console as it is found, counted on the status
// page, and the machine keeps serving.
func TestFaultIsReportedAndServiceGoesOn(t *testing.T) {
	h, con, base := serving(t)

	// The NIC writes where nothing is mapped, as a device with a stale
	// descriptor would.
	const iova = 0x7fff_f000_0000
	if err := h.Machine.Port(NICAddr).Write(iova, make([]byte, 64)); err == nil {
		t.Fatal("DMA to an unmapped IOVA was not refused")
	}
	con.waitFor(t, "iommu: fault 00:02.0 write 0x7ffff0000000")

	page := get(t, base+"/")
	for _, want := range []string{"iommu faults 1\n", "iommu fault 00:02.0 write 0x7ffff0000000"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, page)
		}
	}
	if body := get(t, base+"/source?bytes=300000"); len(body) != 300000 {
		t.Fatalf("/source after the fault: %d bytes", len(body))
	}
	if n := strings.Count(con.text(), "iommu: fault "); n != 1 {
		t.Fatalf("fault printed %d times:\n%s", n, con.text())
	}
}
