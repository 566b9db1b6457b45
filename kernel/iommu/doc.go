// Package iommu is ether9's Intel VT-d driver. It owns a remapping unit's
// tables outright: Linux is told to leave the unit alone (intel_iommu=off
// intremap=off) and this package writes the root table, the context tables
// and every second-level page table itself, then drives the unit through
// its registers, or, where it remaps interrupts, through its invalidation
// queue.
//
// Layout. The root table has one entry per bus, pointing at a context table
// with one legacy-mode entry per device and function. Each device gets its
// own Domain: a domain id, a 3- or 4-level second-level page table (as
// CAP.SAGAW allows, or as Options force) and an IOVA space. Table pages
// come from kernel.Memory.Alloc and are kept in a Go tree beside the
// hardware entries, so walks never turn physical addresses back into
// pointers. When ECAP.C says the unit does not snoop, every entry written is
// flushed from the CPU caches before anything that depends on it.
//
// Mapping. Map pins a buffer, allocates one IOVA range for all its physical
// segments (first fit, aligned so that 2 MiB-aligned physical stretches
// meet 2 MiB-aligned IOVAs) and writes 2 MiB leaves where CAP.SLLPS allows
// and both sides line up, 4 KiB leaves elsewhere. A failure part way
// clears what was written and frees the IOVA; nothing stays half mapped.
// The mapping keeps the physical segments it was made with.
//
// Syncs. A driver syncs every frame, so a sync takes neither the unit's lock
// nor a walk of the tables: it finds its mapping through the device's own
// index (the mapping last found in the address's page, read without a lock,
// else a search under the device's shared lock), checks the range and
// direction against it, and syncs the slice of the kept segments it covers.
// When the memory says streaming DMA is coherent (kernel.CoherentDMA), the
// checks are all a sync does.
//
// Invalidation. Leaves that become present need no invalidation (unless
// CAP.CM); leaves that go away do. Strict mode invalidates at every unmap,
// page-selective with the smallest address mask that covers the range when
// CAP.PSI and CAP.MAMV allow, domain-selective otherwise, global when the
// unit refuses a finer granularity. Deferred mode queues unmaps and issues
// one invalidation per batch; an unmapped IOVA, and the memory behind it,
// return to use only after that invalidation has completed, so a stale
// IOTLB entry can never alias a new mapping.
//
// Faults. The unit records refused DMA in its fault recording registers;
// Faults reads them (source id, page address, read or write, reason),
// clears each record's F bit and then FSTS, and keeps a bounded log. A NIC
// may complete a descriptor whose DMA faulted, so drivers check here.
//
// Interrupts. With Options.Interrupts the unit also remaps interrupts
// (irte.go): queued invalidation on (queue.go), a 256-entry table, IRE set
// and compatibility-format messages blocked. Remap makes an entry that
// delivers a compatibility-format message's vector and destination to
// one requester id only, and returns the remappable-format message that
// names it; RemapMSI wraps a platform vector that way.
//
// Without translation, Passthrough gives the same kernel.DMA interface
// with DMA addresses equal to physical ones.
package iommu
