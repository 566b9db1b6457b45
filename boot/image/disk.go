package image

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	diskfs "github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/disk"
	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// BootPath is where UEFI firmware looks on removable media for the x86-64
// boot program when it has no boot entry for the disk (UEFI 2.10, 3.5.1.1).
const BootPath = "/EFI/BOOT/BOOTX64.EFI"

const (
	sector = 512
	mib    = 1 << 20
	// espStart leaves the first MiB to the protective MBR and the GPT, and
	// keeps the partition aligned for flash media; the last MiB holds the
	// backup GPT.
	espStart = 1 * mib
	espTail  = 1 * mib
	// minESP keeps the partition FAT32 by its cluster count: firmware and
	// operating systems tell FAT12, 16 and 32 apart by clusters alone, and
	// 512-byte clusters (go-diskfs's choice up to 260 MB) need 65,525 of
	// them, 32 MiB, before a FAT32 file system is one.
	minESP = 40 * mib
	// espSlack is the room the FAT, the directories and cluster rounding
	// take beyond the boot program.
	espSlack = 2 * mib
)

// ErrTooLarge says the boot program does not fit the disk size asked for.
var ErrTooLarge = errors.New("does not fit")

// DiskSize returns the size of the smallest disk image holding boot
// files of n bytes.
func DiskSize(n int64) int64 {
	esp := max(minESP, (n+n/50+espSlack+mib-1)/mib*mib)
	return espStart + esp + espTail
}

// CheckDiskSize says whether boot files of n bytes fit a disk image of
// size bytes, and returns the size to make (size, or DiskSize(n) for 0).
func CheckDiskSize(n, size int64) (int64, error) {
	need := DiskSize(n)
	if size == 0 {
		return need, nil
	}
	if size < need {
		return 0, fmt.Errorf("disk image: %d bytes of boot files %w in %d MiB: the image needs %d MiB",
			n, ErrTooLarge, size/mib, (need+mib-1)/mib)
	}
	if size%sector != 0 {
		return 0, fmt.Errorf("disk image: size %d is not a multiple of %d-byte sectors", size, sector)
	}
	return size, nil
}

// ESPFile is one file of the EFI system partition: its absolute path
// there ("/EFI/BOOT/BOOTX64.EFI") and its contents.
type ESPFile struct {
	Path string
	Data []byte
}

// WriteDisk writes a GPT disk image to path whose EFI system partition
// holds boot at BootPath alone; see WriteDiskFiles.
func WriteDisk(path string, boot []byte, size int64) error {
	return WriteDiskFiles(path, []ESPFile{{Path: BootPath, Data: boot}}, size)
}

// WriteDiskFiles writes a GPT disk image to path: one EFI system
// partition (FAT32) holding files, their directories made as needed,
// size bytes in all (0: DiskSize). It is built in a temporary file beside
// path and renamed onto it when whole and read back, so that a failure
// leaves no image and an older one stands. The partition and disk GUIDs
// derive from the files' hash, and the FAT's timestamps are
// SOURCE_DATE_EPOCH's when it is set (reproducible builds' convention,
// which go-diskfs follows): then the same files give the same image.
func WriteDiskFiles(path string, files []ESPFile, size int64) error {
	n, err := checkFiles(files)
	if err != nil {
		return err
	}
	size, err = CheckDiskSize(n, size)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Truncate(size); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	if err := layDisk(tmp, files, size); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	for _, f := range files {
		got, err := ReadFile(tmp.Name(), f.Path)
		if err != nil {
			return fmt.Errorf("disk image: reading it back: %w", err)
		}
		if sha256.Sum256(got) != sha256.Sum256(f.Data) {
			return fmt.Errorf("disk image: %s read back differs from what was written", f.Path)
		}
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	ok = true
	return nil
}

// checkFiles refuses what the partition cannot hold as asked (no files,
// a relative or unclean path, one named twice) and returns their bytes.
func checkFiles(files []ESPFile) (int64, error) {
	if len(files) == 0 {
		return 0, fmt.Errorf("disk image: no files")
	}
	var n int64
	seen := map[string]bool{}
	for _, f := range files {
		if !strings.HasPrefix(f.Path, "/") || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return 0, fmt.Errorf("disk image: file path %q: want an absolute, clean path", f.Path)
		}
		key := strings.ToUpper(f.Path) // FAT compares names without case
		if seen[key] {
			return 0, fmt.Errorf("disk image: %s named twice", f.Path)
		}
		seen[key] = true
		n += int64(len(f.Data))
	}
	return n, nil
}

// diskHash identifies the files' names and contents, for the GUIDs.
func diskHash(files []ESPFile) [sha256.Size]byte {
	if len(files) == 1 && files[0].Path == BootPath {
		return sha256.Sum256(files[0].Data) // as images of one boot program always were
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(f.Data))
		h.Write(f.Data)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func layDisk(f *os.File, files []ESPFile, size int64) error {
	d, err := diskfs.OpenBackend(file.New(f, false), diskfs.WithOpenMode(diskfs.ReadWrite), diskfs.WithSectorSize(sector))
	if err != nil {
		return err
	}
	sum := diskHash(files)
	table := &gpt.Table{
		LogicalSectorSize:  sector,
		PhysicalSectorSize: sector,
		ProtectiveMBR:      true,
		GUID:               guid(sum[:16]),
		Partitions: []*gpt.Partition{{
			Index: 1,
			Start: espStart / sector,
			End:   uint64(size-espTail)/sector - 1,
			Type:  gpt.EFISystemPartition,
			Name:  "EFI system partition",
			GUID:  guid(sum[16:]),
		}},
	}
	if err := d.Partition(table); err != nil {
		return fmt.Errorf("GPT: %w", err)
	}
	fs, err := d.CreateFilesystem(disk.FilesystemSpec{
		Partition: 1, FSType: filesystem.TypeFat32, VolumeLabel: "ETHER9", Reproducible: true,
	})
	if err != nil {
		return fmt.Errorf("FAT32: %w", err)
	}
	for _, file := range files {
		if dir := path.Dir(file.Path); dir != "/" {
			if err := fs.Mkdir(dir); err != nil {
				return fmt.Errorf("FAT32: %w", err)
			}
		}
		w, err := fs.OpenFile(file.Path, os.O_CREATE|os.O_RDWR)
		if err != nil {
			return fmt.Errorf("FAT32: %w", err)
		}
		if _, err := w.Write(file.Data); err != nil {
			return fmt.Errorf("FAT32: writing %s: %w", file.Path, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("FAT32: %w", err)
		}
	}
	return nil
}

// ReadBootProgram returns BootPath from the first partition of the disk
// image at path.
func ReadBootProgram(path string) ([]byte, error) { return ReadFile(path, BootPath) }

// ReadFile returns the file name from the first partition of the disk
// image at path.
func ReadFile(path, name string) ([]byte, error) {
	d, err := diskfs.Open(path, diskfs.WithOpenMode(diskfs.ReadOnly), diskfs.WithSectorSize(sector))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fs, err := d.GetFilesystem(1)
	if err != nil {
		return nil, fmt.Errorf("partition 1: %w", err)
	}
	r, err := fs.OpenFile(name, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("partition 1: %s: %w", name, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}

// guid formats 16 bytes as a version-4-shaped GUID string.
func guid(b []byte) string {
	var u [16]byte
	copy(u[:], b)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%X-%X-%X-%X-%X", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}
