// Package nicmodel holds the parts of the Ethernet controller models that
// do not depend on one part's register set: the Toeplitz hash used for
// receive-side scaling, the Internet checksums the offload engines insert
// and verify, the IPv6 extension header walk, and frame classification
// for the statistics registers.
package nicmodel
