package probe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/pci"
)

// messenger turns a platform vector into what a function must send to
// raise it.
type messenger func(v kernel.MSI) (kernel.MSI, error)

// messages is f's messenger: the vector's own message, or, where f's
// unit remaps interrupts, the message of an entry of the unit's table
// that delivers the vector from f alone.
func messages(unit *iommu.Unit, f *pci.Function) messenger {
	if unit == nil || !unit.RemapsInterrupts() {
		return func(v kernel.MSI) (kernel.MSI, error) { return v, nil }
	}
	source := iommu.SourceID(f.Addr.Bus, f.Addr.Dev, f.Addr.Fn)
	return func(v kernel.MSI) (kernel.MSI, error) {
		r, err := unit.RemapMSI(source, v)
		if err != nil {
			return nil, errors.Join(err, v.Close())
		}
		return r, nil
	}
}

// vector takes a platform vector and makes it f's through msg.
func vector(p Platform, msg messenger) (kernel.MSI, error) {
	v, err := p.MSI()
	if err != nil {
		return nil, err
	}
	return msg(v)
}

// enableMSIX gives f the n MSI-X vectors its driver asked for: n
// vectors from the platform, the capability's table (in the BAR its BIR
// names, checked to lie inside it) pointing entry i at vector i, MSI-X
// enabled. On an error nothing stays allocated or enabled, and the
// caller falls back to the function's one interrupt.
func enableMSIX(p Platform, f *pci.Function, n int, msg messenger) ([]kernel.MSI, error) {
	m, ok, err := pci.FindMSIX(p.Config, f.Addr)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no MSI-X capability")
	}
	if err := m.Check(f.BARs); err != nil {
		return nil, err
	}
	if n > m.TableSize {
		return nil, fmt.Errorf("%d vectors wanted, the table has %d", n, m.TableSize)
	}
	table, err := p.BAR(f, m.TableBIR)
	if err != nil {
		return nil, fmt.Errorf("table bar%d: %w", m.TableBIR, err)
	}
	vecs := make([]kernel.MSI, 0, n)
	release := func(err error) error {
		for _, v := range vecs {
			err = errors.Join(err, v.Close())
		}
		return err
	}
	msgs := make([]pci.Message, 0, n)
	for range n {
		v, err := vector(p, msg)
		if err != nil {
			return nil, release(fmt.Errorf("vector %d of %d: %w", len(vecs), n, err))
		}
		vecs = append(vecs, v)
		msgs = append(msgs, pci.Message{Addr: v.MSIAddress(), Data: uint32(v.MSIData())})
	}
	if err := m.Program(p.Config, f.Addr, table, msgs); err != nil {
		return nil, release(errors.Join(err, m.Disable(p.Config, f.Addr)))
	}
	return vecs, nil
}

// disableMSIX turns f's MSI-X off again and gives its vectors back,
// after a probe that failed.
func disableMSIX(p Platform, f *pci.Function, vecs []kernel.MSI) error {
	m, ok, err := pci.FindMSIX(p.Config, f.Addr)
	if ok {
		err = m.Disable(p.Config, f.Addr)
	}
	errs := []error{err}
	for _, v := range vecs {
		errs = append(errs, v.Close())
	}
	return errors.Join(errs...)
}

// enableMSI points f's MSI capability at one vector and enables it; on
// an error the vector is given back.
func enableMSI(p Platform, f *pci.Function, msg messenger) (kernel.MSI, error) {
	m, ok, err := pci.FindMSI(p.Config, f.Addr)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no MSI capability")
	}
	v, err := vector(p, msg)
	if err != nil {
		return nil, err
	}
	if err := m.Program(p.Config, f.Addr, v.MSIAddress(), v.MSIData()); err != nil {
		return nil, errors.Join(err, v.Close())
	}
	return v, nil
}

// disableMSI turns f's MSI off again and gives its vector back, after a
// probe that failed.
func disableMSI(p Platform, f *pci.Function, v kernel.MSI) error {
	m, ok, err := pci.FindMSI(p.Config, f.Addr)
	if ok {
		err = m.Disable(p.Config, f.Addr)
	}
	return errors.Join(err, v.Close())
}

// vectorList names vectors, "48 49 50", and says which entries of the
// unit's interrupt remapping table they come through.
func vectorList(vecs []kernel.MSI) string {
	s := make([]string, len(vecs))
	var entries []string
	for i, v := range vecs {
		s[i] = fmt.Sprint(v.Vector())
		if r, ok := v.(*iommu.RemappedMSI); ok {
			entries = append(entries, fmt.Sprint(r.Entry()))
		}
	}
	if entries == nil {
		return strings.Join(s, " ")
	}
	return strings.Join(s, " ") + "; remapped, entries " + strings.Join(entries, " ")
}
