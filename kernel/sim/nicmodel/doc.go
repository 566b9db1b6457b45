// Package nicmodel holds what the 82574, 82576 and I225 models do alike,
// so that each model keeps only what its own registers and descriptors
// mean: the registers and bits the datasheets give alike (regs.go); the
// NIC plumbing (New's checks, the lock order, attaching to a wire, the
// software reset's common values, EECD, SWSM and STATUS.SPEED); the
// transmit queue engine (ring fetch, status or head write-back, buffer
// gathering, frames to the wire) and TCP segmentation; the receive
// parser, the frame as stored, the descriptor prefetch cache, the legacy
// write-back and the packet buffer; the Internet checksums (inserted on
// transmit, checked on receive) and the Toeplitz hash; the statistics
// registers, MDIC with the clause 22 PHY registers, the NVM checksum and
// EERD; and the PCI capabilities and BAR plumbing, the MSI-X table with
// its pending bits among them.
//
// Like the models, it is written from the datasheets and the PCI
// specification, never from the drivers, so that a driver and a model
// that read a register differently disagree in a test.
// Package nicmodeltest holds what their tests share.
package nicmodel
