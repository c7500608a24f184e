package crowhome

// FileError is the one error type of this package's readers and writer: the
// file, the key inside it (empty when the whole file is at fault) and what
// was wrong. Err, when set, is the underlying cause (for example
// fs.ErrNotExist), so errors.Is works through a FileError.
type FileError struct {
	// File is the path of the file as the caller named it.
	File string
	// Key is a JSON (or YAML) path inside File, like ["kb"].args[2]; empty
	// when the problem is the file as a whole.
	Key string
	// Msg says what was wrong. It quotes no value from the file (a
	// symlinked manifest could point at anything), only key names.
	Msg string
	// Err is the cause, if another error caused this one.
	Err error
}

func (e *FileError) Error() string {
	if e.Key == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Key + ": " + e.Msg
}

// Unwrap returns the cause, so errors.Is(err, fs.ErrNotExist) works.
func (e *FileError) Unwrap() error { return e.Err }
