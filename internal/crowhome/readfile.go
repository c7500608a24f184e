package crowhome

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readRegular reads a whole regular file of at most MaxFileSize bytes.
//
// It opens with O_NONBLOCK so a FIFO planted at the path cannot hang the
// controller, then insists on a regular file. With noFollow a symlink at
// the last path element is refused instead of followed (addon-walls.json
// has one writer, and a link would hand its content to whoever owns the
// target). A missing file returns an error wrapping fs.ErrNotExist.
func readRegular(file string, noFollow bool) ([]byte, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if noFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := openRetry(file, flags, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, &FileError{File: file, Msg: "does not exist", Err: fs.ErrNotExist}
		case noFollow && errors.Is(err, unix.ELOOP):
			return nil, &FileError{File: file, Msg: "is a symlink; it must be a regular file", Err: err}
		}
		return nil, &FileError{File: file, Msg: "could not be opened: " + err.Error(), Err: err}
	}
	f := os.NewFile(uintptr(fd), file)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &FileError{File: file, Msg: "could not be examined: " + err.Error(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &FileError{File: file, Msg: "is not a regular file"}
	}
	if st.Size > MaxFileSize {
		return nil, &FileError{File: file, Msg: fmt.Sprintf("is larger than %d bytes", MaxFileSize)}
	}
	// The size can grow between fstat and read; the limit holds on the read.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &FileError{File: file, Msg: "could not be read: " + err.Error(), Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, &FileError{File: file, Msg: fmt.Sprintf("is larger than %d bytes", MaxFileSize)}
	}
	return data, nil
}

func openRetry(file string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(file, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
