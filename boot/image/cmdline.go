package image

import (
	"fmt"
	"strings"
)

// BaseCmdline is the kernel command line every image boots with. Linux
// must leave VT-d to us: intel_iommu=off alone keeps interrupt remapping
// and queued invalidation on, and then the unit cannot be mapped or driven
// with register-based invalidation; intremap=off releases it completely.
const BaseCmdline = "console=ttyS0 panic=-1 quiet intel_iommu=off intremap=off"

// Cmdline joins the base command line with extra words. Each extra word is
// either an ether9.* option for /init or a kernel parameter; words that
// would undo the base (handing VT-d back to Linux) are refused.
func Cmdline(extra ...string) (string, error) {
	words := strings.Fields(BaseCmdline)
	for _, e := range extra {
		for _, w := range strings.Fields(e) {
			key, _, _ := strings.Cut(w, "=")
			switch key {
			case "intel_iommu", "intremap", "iommu":
				return "", fmt.Errorf("cmdline: %q would give VT-d back to Linux; ether9 drives it itself", w)
			}
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), nil
}
