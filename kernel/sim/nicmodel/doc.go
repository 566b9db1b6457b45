// Package nicmodel holds the parts of the Ethernet controller models that
// the 82574, 82576 and I225 do alike: the transmit queue engine (ring
// fetch, status write-back, buffer gathering, frames to the wire), TCP
// segmentation, the Internet checksums the offload engines insert and
// verify, the IPv6 extension header walk, the Toeplitz hash of
// receive-side scaling, the receive packet buffer, the statistics
// registers, frame classification for them, and the PCI capabilities and
// BAR plumbing. What a part's registers and descriptors mean stays in its
// model.
package nicmodel
