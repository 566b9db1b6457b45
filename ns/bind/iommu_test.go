package bind

import (
	"reflect"
	"testing"

	"github.com/ether9/ether9/kernel/iommu"
)

// Every counter of a unit is summed, so a counter added to iommu.Stats
// later shows here as one the machine-wide stats file leaves out.
func TestAddStatsSumsEveryCounter(t *testing.T) {
	var a, b iommu.Stats
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		switch va.Field(i).Kind() {
		case reflect.Int, reflect.Int64:
			va.Field(i).SetInt(int64(i + 1))
			vb.Field(i).SetInt(100)
		case reflect.Uint64:
			va.Field(i).SetUint(uint64(i + 1))
			vb.Field(i).SetUint(100)
		}
	}
	a.Mode, b.Mode = iommu.Deferred, iommu.Strict
	sum := reflect.ValueOf(addStats(a, b))
	typ := sum.Type()
	for i := range sum.NumField() {
		f := sum.Field(i)
		name := typ.Field(i).Name
		if name == "Mode" || name == "DeferredSize" {
			if f.Interface() != va.Field(i).Interface() {
				t.Errorf("%s = %v, want the first unit's %v", name, f.Interface(), va.Field(i).Interface())
			}
			continue
		}
		var got int64
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			got = f.Int()
		case reflect.Uint64:
			got = int64(f.Uint())
		default:
			t.Errorf("%s: a counter of kind %v", name, f.Kind())
			continue
		}
		if got != int64(i+1)+100 {
			t.Errorf("%s = %d, want %d", name, got, i+1+100)
		}
	}
}
